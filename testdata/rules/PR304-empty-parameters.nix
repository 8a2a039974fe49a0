# Empty parameters are no parameters: no finding without a template.
let lib = import ../lib.nix; in
lib.node { fediversity.podRoles.roles.lldap.secrets.jwt.parameters = { }; }
