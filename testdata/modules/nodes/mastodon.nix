# mastodon as its host is written: several modules, units that follow from
# the application's options, the lists of its node module, a request.
(import ../nixos { }).nixosSystem { modules = [ ../hosts/mastodon ]; }
