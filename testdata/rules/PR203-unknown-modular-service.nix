# want: PR203 role authelia at PR203-unknown-modular-service.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.service = "authlia";
}
