# 127.1 is 127.0.0.1 to the resolver: a loopback address.
# want: PR502 role lldap at PR502-lldap-host-short-form.nix:4:12
let lib = import ../lib.nix; in
lib.node { fediversity.lldap.host = "127.1"; }
