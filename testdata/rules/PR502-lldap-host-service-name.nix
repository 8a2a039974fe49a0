# The short name of the Service, and a name that only begins with
# localhost, are no loopback addresses.
let lib = import ../lib.nix; in
lib.node {
  fediversity.lldap.host = "node-lldap";
  fediversity.authelia.host = "localhost.example.org";
}
