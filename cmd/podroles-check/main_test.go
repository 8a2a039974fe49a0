package main

import (
	"strings"
	"testing"

	"github.com/fediversity/podroles/cmd/internal/clitest"
)

// The root's --help describes every command, and there are the checker's
// alone.
func TestHelpDescribesEveryCommand(t *testing.T) {
	if got := strings.Join(clitest.Help(t, newRoot), " "); got != "check facts rules" {
		t.Errorf("podroles-check has %s, want check facts rules", got)
	}
}

// The checker links only what check, facts and rules need: no testing,
// nothing of Kubernetes (plan's types, the namespace check), whose inits
// would slow every start, no HTTP or TLS, no container engine's, no servers'.
func TestLinksOnlyTheNodeCommands(t *testing.T) {
	banned := []string{"testing", "k8s.io/", "net/http", "crypto/tls", "github.com/testcontainers/", "github.com/moby/", "github.com/jackc/pgx/", "github.com/go-ldap/"}
	for _, pkg := range clitest.Deps(t) {
		for _, b := range banned {
			if pkg == b || strings.HasSuffix(b, "/") && strings.HasPrefix(pkg+"/", b) {
				t.Errorf("podroles-check links %s", pkg)
			}
		}
	}
}
