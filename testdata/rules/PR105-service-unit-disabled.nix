# The unit of a modular service that a role runs, disabled on the node:
# no finding.
let lib = import ../lib.nix; in
lib.node { systemd.services.lldap.enable = false; }
