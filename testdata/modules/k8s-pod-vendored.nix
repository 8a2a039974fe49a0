# A host's vendored copy of the platform's k8s-pod.nix: a file of its own
# whose text differs from the platform's (here only by this comment and
# the import), so podroles cannot know it for the platform's module. It
# puts the node on the k8s method and a condition on every unit that the
# lists name, as k8s-pod.nix does.
import ./k8s-pod.nix
