# What the platform's policy gives the node from the requests of its
# applications (FR-003).
{
  fediversity.podRoles.roles = {
    lldap.replicas = 2;
    authelia.replicas = 1;
  };
}
