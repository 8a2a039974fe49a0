# smtp set to an attribute set is set, whatever it holds.
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.smtp = lib.replace { host = "mail.example.org"; };
}
