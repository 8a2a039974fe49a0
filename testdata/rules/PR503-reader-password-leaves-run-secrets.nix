# /run/secrets/../keys is /run/keys: not a file in /run/secrets.
let lib = import ../lib.nix; in
lib.node { fediversity.lldap.readerBindPasswordFile = "/run/secrets/../keys/bind-password"; }
