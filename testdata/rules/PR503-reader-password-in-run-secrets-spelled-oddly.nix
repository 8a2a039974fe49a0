# A file in /run/secrets however the path is spelled.
# want: PR503 role lldap
let lib = import ../lib.nix; in
lib.node { fediversity.lldap.readerBindPasswordFile = "/run//secrets/./bind-password"; }
