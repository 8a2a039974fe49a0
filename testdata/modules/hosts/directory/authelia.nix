# authelia as a role of its own (Known Deviations, SC-005).
{ config, lib, ... }:
let
  node = config.networking.hostName;
in
{
  system.services.authelia.process.argv = [ "/bin/authelia" "--config" "/etc/authelia/configuration.yml" ];
  systemd.services.authelia.enable = lib.mkIf config.fediversity.k8sPod.enable false;

  fediversity.podRoles = {
    roles.authelia = {
      service = "authelia";
      ports = [ { port = 9091; } ];
      metrics.port = 9959;
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
          parameters = { common_name = "${node}-authelia.directory.svc.cluster.local"; ttl = "72h"; };
          restart = true;
        };
      };
    };
    services.authelia.environment.X_AUTHELIA_CONFIG_FILTERS = "template";
  };

  fediversity.authelia = {
    host = "${node}-authelia.directory.svc.cluster.local";
    caFile = "/etc/ssl/openbao-internal-ca.pem";
    storage.postgres = { host = "postgres.directory.svc"; database = "authelia"; };
    smtp = { host = "smtp.example.org"; port = 587; sender = "auth@example.org"; };
  };
}
