# The Service's name alone, in capitals and with a trailing dot: the
# resolver reads it as node-lldap, the Service in the reader's namespace.
let lib = import ../lib.nix; in
lib.node { fediversity.lldap.host = "Node-LLDAP."; }
