# directory as its host is written: lldap and authelia as roles of their
# own services' images.
(import ../nixos { }).nixosSystem { modules = [ ../hosts/directory ]; }
