# A program for a service whose role asks for no companion is unused, not
# wrong.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.services.authelia.companion = "/bin/companion";
}
