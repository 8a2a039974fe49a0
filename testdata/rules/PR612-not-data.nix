# Values that are no data in a role's settings (FR-002), none of which may
# be forced, built or copied to be found: a derivation whose builder fails,
# a path literal to a file that does not exist, a function, and a string of
# the store.
# want: PR612 option fediversity.podRoles.roles.authelia.secrets."tls.pem".parameters.csr at PR612-not-data.nix:15:5
# want: PR612 option fediversity.podRoles.roles.authelia.secrets."tls.pem".parameters.ttl at PR612-not-data.nix:16:5
# want: PR612 option fediversity.podRoles.roles.lldap.secrets.jwt.path at PR612-not-data.nix:18:3
# want: PR612 option fediversity.podRoles.services.lldap.companion at PR612-not-data.nix:19:3
let
  lib = import ../lib.nix;
  never = derivation { name = "podroles-never-built"; builder = "/bin/false"; system = builtins.currentSystem; };
in
lib.node {
  fediversity.podRoles.roles.authelia.secrets."tls.pem".parameters = {
    csr = never;
    ttl = hours: "${toString hours}h";
  };
  fediversity.podRoles.roles.lldap.secrets.jwt.path = ./no-such-file-of-secrets;
  fediversity.podRoles.services.lldap.companion = "${never}/bin/companion";
}
