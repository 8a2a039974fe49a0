# A role of the node's image given a secret through the request (US2-5).
# want: PR301 role worker at PR301-secrets-without-service.nix:5:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.secrets."app.env" = {
    path = "secret/data/app/env";
    field = "env";
  };
}
