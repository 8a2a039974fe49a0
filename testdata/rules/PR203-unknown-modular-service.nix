# want: PR203 role authelia
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.service = "authlia";
}
