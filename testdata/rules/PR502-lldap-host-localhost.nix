# fediversity.lldap.host left at its default, localhost.
# want: PR502 role lldap at ../lib.nix:53:9
let lib = import ../lib.nix; in
lib.node {
  fediversity.lldap = lib.replace {
    readerBindPasswordFile = "/var/lib/lldap-reader/bind-password";
    tls = { enable = true; caFile = "/etc/ssl/openbao-ca.pem"; };
  };
}
