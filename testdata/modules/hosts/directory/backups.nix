# The backups of the directory, as the host lists them: the unit that made
# them was removed with an old module, its name stayed in mainUnits.
{
  fediversity.podRoles.mainUnits = [ "ldap-backups" ];
}
