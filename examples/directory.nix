# A directory node on the k8s method, as deployment-k8s-hosts runs it: lldap
# as a role from its service's image with 2 replicas, a companion that does
# the work of lldap-provision and secrets from OpenBao through a sidecar;
# authelia as a role with 1 replica, behind the nginx of the main pod.
# Written against the node surface (docs/node-surface.md).
{
  networking.hostName = "directory";
  networking.firewall.allowedTCPPorts = [ 80 443 ];

  systemd.services = {
    nginx = { };
    lldap-publish-roles = { };
    openbao-agent = { };
    nscd = { };
    # the units of the modular services: their roles run them
    lldap.enable = false;
    authelia.enable = false;
  };

  system.services = {
    lldap = { };
    authelia = { };
  };

  fediversity.k8sPod = {
    enable = true;
    platformUnits = [ "nscd" "openbao-agent" ];
  };

  fediversity.podRoles = {
    roles.lldap = {
      replicas = 2;
      service = "lldap";
      companion = true;
      # LDAPS, and the HTTP port that the check itself uses (Known
      # Deviations); plain LDAP stays in the pod.
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
          parameters = { common_name = "directory-lldap.directory.svc.cluster.local"; ttl = "72h"; };
          restart = true;
        };
      };
    };
    roles.authelia = {
      replicas = 1;
      service = "authelia";
      ports = [ { port = 9091; } ];
      metrics = { port = 9959; };
      secrets = {
        jwt = { path = "secret/data/authelia/jwt"; field = "value"; };
        session = { path = "secret/data/authelia/session"; field = "value"; };
        storage-key = { path = "secret/data/authelia/storage"; field = "value"; encoding = "base64"; };
        "db.env" = {
          path = "database/creds/authelia";
          template = "AUTHELIA_STORAGE_POSTGRES_PASSWORD={{ .Data.password }}\nAUTHELIA_STORAGE_POSTGRES_USERNAME={{ .Data.username }}";
          restart = true;
        };
        "tls.pem" = {
          path = "pki/issue/internal";
          template = "{{ .Data.certificate }}\n{{ .Data.private_key }}";
          parameters = { common_name = "directory-authelia.directory.svc.cluster.local"; ttl = "72h"; };
          restart = true;
        };
      };
    };
    mainUnits = [ "nginx" "lldap-publish-roles" ];
    services.lldap = {
      environment = {
        LLDAP_LDAPS_OPTIONS__ENABLED = "true";
        LLDAP_LDAPS_OPTIONS__PORT = "6360";
      };
      companion = "/bin/companion";
    };
    services.authelia.environment = {
      X_AUTHELIA_CONFIG_FILTERS = "template";
    };
  };

  fediversity.lldap = {
    host = "directory-lldap.directory.svc.cluster.local";
    readerBindPasswordFile = "/var/lib/lldap-reader/bind-password";
    tls = { enable = true; caFile = "/etc/ssl/openbao-internal-ca.pem"; };
  };

  fediversity.authelia = {
    host = "directory-authelia.directory.svc.cluster.local";
    caFile = "/etc/ssl/openbao-internal-ca.pem";
    storage.postgres = { host = "postgres.directory.svc"; database = "authelia"; };
    smtp = { host = "smtp.example.org"; port = 587; sender = "auth@example.org"; };
    forwardAuth.enable = false;
  };
}
