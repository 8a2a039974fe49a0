package localenv

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/fediversity/podroles/harness/controlplane"
)

// TestHostsAreDistinct: no two parts of an environment share an address
// of its loopback prefix. Every constant host* of site.go's table is
// read, the lldap pods taking one host per replica.
func TestHostsAreDistinct(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "site.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	fromControlPlane := map[string]int{"HostAPIServer": controlplane.HostAPIServer, "HostFakeNode": controlplane.HostFakeNode}
	taken := map[int]string{}
	take := func(h int, name string) {
		if other, ok := taken[h]; ok {
			t.Errorf("host .%d is both %s and %s", h, other, name)
		}
		taken[h] = name
	}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || len(spec.Values) != 1 || !strings.HasPrefix(spec.Names[0].Name, "host") {
			return true
		}
		name := spec.Names[0].Name
		var h int
		switch v := spec.Values[0].(type) {
		case *ast.BasicLit:
			h, _ = strconv.Atoi(v.Value)
		case *ast.SelectorExpr:
			var known bool
			if h, known = fromControlPlane[v.Sel.Name]; !known {
				t.Fatalf("%s: a host of controlplane this test does not know: %s", name, v.Sel.Name)
			}
		default:
			t.Fatalf("%s: a host that is neither a number nor controlplane's", name)
		}
		count := 1
		if name == "hostLLDAPPod" {
			count = replicas
		}
		for i := range count {
			take(h+i, name)
		}
		return true
	})
	if len(taken) < 10 {
		t.Errorf("only %d hosts read from site.go: %v", len(taken), taken)
	}
}
