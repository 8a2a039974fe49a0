# What the platform's policy gives the node from the requests of its
# applications (FR-003).
{
  fediversity.podRoles.roles.sidekiq.replicas = 2;
}
