# A state migration of another unit does not touch the role of lldap.
let lib = import ../lib.nix; in
lib.node {
  systemd.stateMigrations.postgresql = { };
}
