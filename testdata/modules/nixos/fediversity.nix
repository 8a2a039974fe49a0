# The options of the node surface under fediversity (docs/
# node-surface.md), with the types and defaults that page gives.
{ lib, ... }:
let
  inherit (lib) mkOption types;
  nullOr = type: description: mkOption { type = types.nullOr type; default = null; inherit description; };
  flag = description: mkOption { type = types.bool; default = false; inherit description; };
  unitNames = description: mkOption { type = types.listOf types.str; default = [ ]; inherit description; };

  secret = { name, ... }: {
    options = {
      path = mkOption { type = types.str; example = "secret/data/lldap/jwt"; description = "The full path of the secret ${name} in the KV v2 API of OpenBao."; };
      field = nullOr types.str "The field of the KV entry.";
      encoding = nullOr (types.enum [ "base64" ]) "How the field is encoded.";
      variable = nullOr types.str "The field is an environment file: take this variable's value, with no line end.";
      template = nullOr types.lines "Instead of field, encoding and variable: a template over the response of another engine.";
      parameters = nullOr (types.attrsOf types.anything) "With a template: the parameters of the request.";
      restart = flag "Whether a new value restarts the service's container.";
    };
  };

  role = { name, ... }: {
    options = {
      replicas = nullOr types.ints.positive "Set by the policy from the requests; null means no request for the role ${name}.";
      units = unitNames "The units of the role (FR-004).";
      service = nullOr types.str "A modular service: the role runs that service's image.";
      secrets = mkOption { type = types.attrsOf (types.submodule secret); default = { }; description = "Files in /run/secrets, by file name (FR-009)."; };
      ports = mkOption {
        type = types.listOf (types.submodule {
          options.port = mkOption { type = types.port; description = "The port."; };
          options.protocol = mkOption { type = types.enum [ "TCP" "UDP" ]; default = "TCP"; description = "The protocol."; };
        });
        default = [ ];
        description = "The ports of the role's pods (FR-010).";
      };
      metrics = nullOr (types.submodule {
        options.port = mkOption { type = types.port; description = "The metrics port."; };
        options.path = mkOption { type = types.str; default = "/metrics"; description = "The metrics path."; };
      }) "Prometheus metrics of the pods (FR-010a).";
      companion = flag "A second container from the service's image (FR-012).";
    };
  };
in
{
  options.fediversity = {
    podRoles = {
      roles = mkOption { type = types.attrsOf (types.submodule role); default = { }; description = "The roles of the node."; };
      mainUnits = unitNames "Units of the main pod only.";
      sharedUnits = unitNames "Units of every pod.";
      services = mkOption {
        type = types.attrsOf (types.submodule {
          options.environment = mkOption { type = types.attrsOf types.str; default = { }; description = "Variables of the service's image (FR-011)."; };
          options.companion = nullOr types.path "The program of the companion container (FR-012).";
        });
        default = { };
        description = "Settings of the images of modular services.";
      };
    };

    k8sPod = {
      enable = flag "Whether the node is evaluated on k8s-pod.nix: the k8s method.";
      platformUnits = unitNames "The units of NixOS and of the platform that k8s-pod.nix lists (FR-014).";
    };

    lldap = {
      host = mkOption { type = types.str; default = "localhost"; description = "Where readers of the ldap contract reach lldap."; };
      readerBindPasswordFile = nullOr types.path "The bind password file of a reader.";
      tls.enable = flag "Whether lldap serves LDAPS.";
      tls.caFile = nullOr types.path "The CA file that readers verify lldap with.";
    };

    authelia = {
      host = mkOption { type = types.str; default = "localhost"; description = "Where the main pod's nginx reaches authelia."; };
      caFile = nullOr types.path "The CA file that nginx verifies authelia with.";
      storage.local = nullOr (types.submodule { options.path = mkOption { type = types.str; description = "The SQLite file."; }; }) "A local storage file.";
      storage.postgres = nullOr (types.submodule {
        options.host = mkOption { type = types.str; description = "The server."; };
        options.database = mkOption { type = types.str; default = "authelia"; description = "The database."; };
        options.passwordFile = nullOr types.str "The file of the password.";
      }) "The Postgres storage.";
      smtp = nullOr (types.submodule {
        options.host = mkOption { type = types.str; description = "The mail server."; };
        options.port = mkOption { type = types.port; default = 587; description = "Its port."; };
        options.sender = mkOption { type = types.str; default = "authelia@localhost"; description = "The sender."; };
        options.password = nullOr types.str "The password.";
      }) "The mail server.";
      forwardAuth.enable = flag "Whether nginx asks authelia on every request.";
    };
  };
}
