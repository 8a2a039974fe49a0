# FR-013: off k8s-pod.nix, input that no method can deploy is still refused
# (here a secret with an unknown encoding and one without a path), and
# nothing else.
# want: PR604 secret jwt at FR013-off-k8s-input.nix:9:3
# want: PR608 secret db.env at FR013-off-k8s-input.nix:10:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.k8sPod.enable = false;
  fediversity.podRoles.roles.lldap.secrets.jwt.encoding = "hex";
  fediversity.podRoles.roles.lldap.secrets."db.env".path = null;
  fediversity.podRoles.roles.lldap.companion = false;
  fediversity.lldap.tls.enable = false;
}
