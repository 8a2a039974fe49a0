# The build script of a podroles check: `podroles check --facts` on facts
# computed at evaluation time. It runs in the build sandbox, with no nix.
# The build log shows the text report; the JUnit report and the facts land
# in the output. A finding that fails the check fails the build; with
# expectRefused, the build fails unless the check refuses the nodes.
# Builtins only, so that tests run the very script with the real binary.
# podrolesCheck is the checker binary (podroles-check): the node commands
# alone, which build faster and smaller than podroles.
{ podrolesCheck, facts, strict ? false, expectRefused ? false }:
''
  mkdir -p "$out"
  cp ${facts} "$out/facts.json"
  status=0
  ${podrolesCheck}/bin/podroles-check check --facts ${facts} --format junit --output "$out/junit.xml"${if strict then " --strict" else ""} || status=$?
'' + (if expectRefused then ''
  if [ "$status" != 1 ]; then
    echo "podroles-check check should have refused these nodes with exit 1, and exited $status" >&2
    exit 1
  fi
'' else ''
  exit "$status"
'')
