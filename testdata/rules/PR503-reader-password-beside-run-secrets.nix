# A directory whose name only starts like /run/secrets is another one.
let lib = import ../lib.nix; in
lib.node {
  fediversity.lldap.readerBindPasswordFile = "/run/secrets-lldap-reader/bind-password";
}
