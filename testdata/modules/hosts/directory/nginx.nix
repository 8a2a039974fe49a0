# The portal: nginx in the main pod, in front of authelia's role.
{
  systemd.services.nginx = {
    description = "nginx";
    wantedBy = [ "multi-user.target" ];
    serviceConfig.ExecStart = "nginx -c /etc/nginx/nginx.conf";
  };
  fediversity.podRoles.mainUnits = [ "nginx" ];
}
