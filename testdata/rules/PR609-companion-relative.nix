# want: PR609 service lldap at PR609-companion-relative.nix:6:3
# FR-012: the program of the companion is at a fixed path in the image of
# the service, so a relative path is no program the container can run.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.services.lldap.companion = "bin/companion";
}
