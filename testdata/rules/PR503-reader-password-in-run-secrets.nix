# want: PR503 role lldap at PR503-reader-password-in-run-secrets.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.lldap.readerBindPasswordFile = "/run/secrets/bind-password";
}
