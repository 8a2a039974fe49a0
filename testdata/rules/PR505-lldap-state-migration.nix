# want: PR505 role lldap at PR505-lldap-state-migration.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  systemd.stateMigrations.lldap = { };
}
