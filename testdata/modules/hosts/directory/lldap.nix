# lldap as a role of its own (US2-10, Known Deviations): the role runs the
# service's image with a companion that does the work of lldap-provision,
# and readers in the main pod reach it over LDAPS at its Service.
{ config, lib, ... }:
let
  onK8s = config.fediversity.k8sPod.enable;
  node = config.networking.hostName;
in
{
  system.services.lldap.process.argv = [ "/bin/lldap" "run" "--config-file" "/etc/lldap/lldap_config.toml" ];

  systemd.services = {
    # Its role runs it from the service's image (US1-6).
    lldap.enable = lib.mkIf onK8s false;
    lldap-provision = {
      description = "lldap: users and groups from OpenTofu";
      after = [ "lldap.service" ];
      script = "tofu apply -auto-approve";
      # The companion of the role does this work; the main pod does not
      # start it.
      enable = lib.mkIf onK8s false;
    };
    lldap-publish-roles = {
      description = "lldap: publish the members of role groups to OpenBao";
      wantedBy = [ "multi-user.target" ];
      script = "lldap-publish-roles";
    };
  };

  fediversity.podRoles = {
    roles.lldap = {
      service = "lldap";
      companion = true;
      # LDAPS, and the HTTP port that the check itself uses; plain LDAP
      # (3890) stays in the pod.
      ports = [ { port = 6360; } { port = 17170; } ];
      secrets = {
        jwt = { path = "secret/data/lldap/jwt"; field = "value"; encoding = "base64"; restart = true; };
        key-seed = { path = "secret/data/lldap/key-seed"; field = "value"; restart = true; };
        bind-password = { path = "secret/data/lldap/authelia-bind"; field = "env"; variable = "LLDAP_LDAP_USER_PASS"; };
        "db.env" = {
          path = "database/creds/lldap";
          template = "LLDAP_DATABASE_URL=postgres://{{ .Data.username }}:{{ .Data.password }}@postgres.directory.svc/lldap";
          restart = true;
        };
        "tls.pem" = {
          path = "pki/issue/internal";
          template = "{{ .Data.certificate }}\n{{ .Data.private_key }}";
          parameters = { common_name = "${node}-lldap.directory.svc.cluster.local"; ttl = "72h"; };
          restart = true;
        };
      };
    };
    mainUnits = [ "lldap-publish-roles" ];
    services.lldap = {
      environment = {
        LLDAP_LDAPS_OPTIONS__ENABLED = "true";
        LLDAP_LDAPS_OPTIONS__PORT = "6360";
      };
      companion = "/bin/companion";
    };
  };

  # A node does not know the name of its Deployment: the node module gives
  # the name of the role's Service (Known Deviations).
  fediversity.lldap = {
    host = "${node}-lldap.directory.svc.cluster.local";
    readerBindPasswordFile = "/var/lib/lldap-reader/bind-password";
    tls = { enable = true; caFile = "/etc/ssl/openbao-internal-ca.pem"; };
  };
}
