# The good node's bind-password: a variable of the field env.
let lib = import ../lib.nix; in
lib.node { }
