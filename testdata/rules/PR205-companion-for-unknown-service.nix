# US2-7 refuses variables for a modular service that does not exist; it
# asks nothing of a companion program alone. A leftover program for a
# service the node no longer has, with no variables, gives no finding (a role
# that wanted it would be refused by PR207 instead).
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.services.peertube.companion = "/bin/companion";
}
