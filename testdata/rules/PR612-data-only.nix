# Parameters of every data type, nested: all data.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.secrets."tls.pem".parameters = {
    common_name = "node-authelia.ns.svc";
    alt_names = [ "authelia.example.org" "auth.example.org" ];
    ttl = "24h";
    exclude_cn_from_sans = false;
    key_bits = 4096;
    other = { nested = [ 1 null ]; };
  };
}
