# A file that sets no networking.hostName is named after the file, here
# "PR607-Made_Up_Name": a name podroles made up is not held against the
# node, so its Deployment names are not refused.
let lib = import ../lib.nix; in
lib.node { networking.hostName = ""; }
