package scenarios

import (
	"fmt"
	"slices"
	"strings"
)

// registry is every suite, in the order that `scenarios list`, the
// generated reference (docs/scenarios.md) and the registry's tests show
// them: the cluster's objects first, then what runs in the pods, then
// what changes the world. It is the one place a suite is declared; each
// suite's scenarios are in its own file.
var registry = []*Suite{
	deploymentsSuite,
	unitsSuite,
	ldapSuite,
	lldapHTTPSuite,
	postgresSuite,
	secretsSuite,
	autheliaSuite,
	rotationSuite,
}

// Suites returns every suite, in the registry's order.
func Suites() []*Suite { return slices.Clone(registry) }

// Select returns the suites named in names (all when names is empty), or an
// error naming a suite that does not exist.
func Select(names []string) ([]*Suite, error) {
	if len(names) == 0 {
		return Suites(), nil
	}
	var out []*Suite
	for _, name := range names {
		i := slices.IndexFunc(registry, func(s *Suite) bool { return s.Name == name })
		if i < 0 {
			var known []string
			for _, s := range registry {
				known = append(known, s.Name)
			}
			return nil, fmt.Errorf("no suite %q: the suites are %s", name, strings.Join(known, ", "))
		}
		out = append(out, registry[i])
	}
	return out, nil
}

// IDs are the "suite/scenario" of every registered scenario, in order.
func IDs() []string {
	var out []string
	for _, su := range registry {
		for _, sc := range su.Scenarios {
			out = append(out, su.Name+"/"+sc.Name)
		}
	}
	return out
}
