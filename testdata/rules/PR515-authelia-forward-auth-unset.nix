# forwardAuth left unset defaults to false.
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia = lib.replace {
    host = "node-authelia.ns.svc.cluster.local";
    caFile = "/etc/ssl/openbao-ca.pem";
    storage.postgres = { host = "postgres.ns.svc"; database = "authelia"; };
    smtp = { host = "smtp.example.org"; port = 587; };
  };
}
