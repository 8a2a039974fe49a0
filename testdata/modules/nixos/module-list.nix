# The declarations every node is evaluated with, as nixpkgs' module-list.nix.
[
  ./misc.nix
  ./networking.nix
  ./systemd.nix
  ./modular-services.nix
  ./fediversity.nix
]
