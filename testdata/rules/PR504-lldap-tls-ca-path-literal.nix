# The CA file as a Nix path literal.
let lib = import ../lib.nix; in
lib.node {
  fediversity.lldap.tls.caFile = ./openbao-ca.pem;
}
