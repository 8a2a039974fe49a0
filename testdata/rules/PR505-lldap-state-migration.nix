# want: PR505 role lldap
let lib = import ../lib.nix; in
lib.node {
  systemd.stateMigrations.lldap = { };
}
