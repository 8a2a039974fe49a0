# Helpers for the rule fixtures: a correct node on k8s-pod.nix, written
# against docs/node-surface.md, and a way to change one thing in it.
# Builtins only: the fixtures evaluate with the real nix and no nixpkgs.
rec {
  # Merges b into a: attribute sets merge, anything else in b replaces a.
  # The names that b sets keep their positions in b's file, so that a
  # finding's location is the fixture's line (builtins.mapAttrs would lose
  # them; it touches only the names that merge or are replaced).
  update = a: b:
    let
      merges = name: v: builtins.isAttrs v && (v ? _replace || builtins.isAttrs (a.${name} or null));
      merged = builtins.removeAttrs b (builtins.filter (name: !(merges name b.${name})) (builtins.attrNames b));
    in
    a // b // builtins.mapAttrs (name: v: if v ? _replace then v._replace else update a.${name} v) merged;

  # replace v: in an update, take v as it is instead of merging it.
  replace = v: { _replace = v; };

  # A node that breaks no rule: a role of the node's image (worker, 2
  # replicas, a port and metrics the firewall opens), a role that runs
  # lldap and one that runs authelia, each as the spec wants them.
  good = {
    networking.hostName = "node";
    networking.firewall = {
      allowedTCPPorts = [ 80 443 ];
      allowedUDPPortRanges = [ { from = 5000; to = 5010; } ];
      interfaces.eth0.allowedTCPPorts = [ 9100 ];
    };
    systemd.services = {
      app-web = { };
      app-worker = { };
      app-init-db = { };
      nginx = { };
      node-exporter = { };
      nscd = { };
      lldap-publish-roles = { };
      sshd.enable = false;
    };
    system.services = { lldap = { }; authelia = { }; };
    fediversity.k8sPod = {
      enable = true;
      platformUnits = [ "nscd" ];
    };
    fediversity.podRoles = {
      roles.worker = {
        replicas = 2;
        units = [ "app-worker" ];
        ports = [ { port = 443; } { port = 5001; protocol = "UDP"; } ];
        metrics = { port = 9100; };
      };
      roles.lldap = {
        replicas = 2;
        service = "lldap";
        companion = true;
        ports = [ { port = 6360; } { port = 17170; } ];
        secrets = {
          jwt = { path = "secret/data/lldap/jwt"; field = "value"; encoding = "base64"; restart = true; };
          "bind-password" = { path = "secret/data/lldap/bind"; field = "env"; variable = "LLDAP_LDAP_USER_PASS"; };
          "db.env" = {
            path = "database/creds/lldap";
            template = "LLDAP_DATABASE_URL=postgres://{{ .Data.username }}:{{ .Data.password }}@postgres/lldap";
            restart = true;
          };
        };
      };
      roles.authelia = {
        replicas = 1;
        service = "authelia";
        ports = [ { port = 9091; } ];
        secrets."tls.pem" = {
          path = "pki/issue/internal";
          template = "{{ .Data.certificate }}{{ .Data.private_key }}";
          parameters = { common_name = "node-authelia.ns.svc"; ttl = "24h"; };
          restart = true;
        };
      };
      mainUnits = [ "app-web" "app-init-db" "nginx" "lldap-publish-roles" ];
      sharedUnits = [ "node-exporter" ];
      services.lldap = {
        environment.LLDAP_LDAPS_OPTIONS__ENABLED = "true";
        companion = "/bin/companion";
      };
      services.authelia.environment.X_AUTHELIA_CONFIG_FILTERS = "template";
    };
    fediversity.lldap = {
      host = "node-lldap.ns.svc.cluster.local";
      readerBindPasswordFile = "/var/lib/lldap-reader/bind-password";
      tls = { enable = true; caFile = "/etc/ssl/openbao-ca.pem"; };
    };
    fediversity.authelia = {
      host = "node-authelia.ns.svc.cluster.local";
      caFile = "/etc/ssl/openbao-ca.pem";
      storage.postgres = { host = "postgres.ns.svc"; database = "authelia"; };
      smtp = { host = "smtp.example.org"; port = 587; };
      forwardAuth.enable = false;
    };
  };

  # node changes: the good node with changes merged in.
  node = changes: update good changes;
}
