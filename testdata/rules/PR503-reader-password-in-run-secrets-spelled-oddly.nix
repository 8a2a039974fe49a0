# A file in /run/secrets however the path is spelled.
# want: PR503 role lldap at PR503-reader-password-in-run-secrets-spelled-oddly.nix:4:12
let lib = import ../lib.nix; in
lib.node { fediversity.lldap.readerBindPasswordFile = "/run//secrets/./bind-password"; }
