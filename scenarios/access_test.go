package scenarios_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fediversity/podroles/scenarios"
)

// accessOf is the access of suites as "verb on resource" words, in
// order, the group before a resource of a named group.
func accessOf(t *testing.T, o scenarios.AccessOptions, names ...string) []string {
	t.Helper()
	suites, err := scenarios.Select(names)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range scenarios.Access(suites, o) {
		word := g.String()
		if g.Group != "" {
			word = g.Verb + " on " + g.Group + "/" + g.Resource
		}
		out = append(out, word)
	}
	return out
}

// discoveryReads are what the discovery reads, whatever the suites.
var discoveryReads = []string{"list on pods", "get on services", "get on apps/deployments"}

// TestEveryScenarioDeclaresItsUses: a scenario says what it asks of a
// cluster, even nothing, so that the Role of scenarios manifest is
// derived from declarations alone.
func TestEveryScenarioDeclaresItsUses(t *testing.T) {
	for _, su := range scenarios.Suites() {
		for _, sc := range su.Scenarios {
			if sc.Uses == nil {
				t.Errorf("%s/%s declares no Uses", su.Name, sc.Name)
			}
		}
	}
}

// TestAccessOfEachSuite states each suite's access in the cluster: the
// discovery's reads, and what the suite's scenarios add.
func TestAccessOfEachSuite(t *testing.T) {
	read := discoveryReads
	exec := []string{"create on pods/exec"}
	status := []string{"get on pods"}
	// Where a role's database is: its URL read in a pod, its host among
	// the namespace's pods, Services and endpoints.
	database := []string{"create on pods/exec", "list on services", "list on discovery.k8s.io/endpointslices"}
	// The reader in the main pod: a probe added to it, and attached to.
	probe := []string{"get on pods", "update on pods/ephemeralcontainers", "create on pods/attach"}
	for _, tc := range []struct {
		suite      string
		adds       []string
		disruptive []string // what --disruptive adds besides
	}{
		{suite: "deployments", adds: append(slices.Clone(exec), append(slices.Clone(probe), "list on apps/replicasets", "list on discovery.k8s.io/endpointslices", "list on events")...)},
		{suite: "units", adds: exec},
		{suite: "ldap", adds: append(slices.Clone(exec), probe...)},
		{suite: "lldap-http"},
		{suite: "postgres", adds: database},
		{suite: "secrets", adds: append(slices.Clone(status), database...)},
		{suite: "authelia", adds: exec},
		// The restarts are told from the kubelet's stops by its events.
		{suite: "rotation", disruptive: append(slices.Clone(status), append(slices.Clone(database), "list on events")...)},
	} {
		t.Run(tc.suite, func(t *testing.T) {
			want := sorted(slices.Compact(sorted(append(slices.Clone(read), tc.adds...))))
			if got := sorted(accessOf(t, scenarios.AccessOptions{InCluster: true}, tc.suite)); !slices.Equal(got, want) {
				t.Errorf("in the cluster: got %q, want %q", got, want)
			}
			outside := sorted(append(slices.Clone(want), "create on pods/portforward"))
			if got := sorted(accessOf(t, scenarios.AccessOptions{}, tc.suite)); !slices.Equal(got, outside) {
				t.Errorf("from outside: got %q, want %q", got, outside)
			}
			// --from-runner adds no probe: only the ldap and deployments
			// suites have one.
			fromRunner := want
			if tc.suite == "ldap" || tc.suite == "deployments" {
				fromRunner = sorted(slices.Compact(sorted(append(slices.Clone(read), exec...))))
			}
			if tc.suite == "deployments" {
				// deployments-as-planned reads the ReplicaSets,
				// services-as-planned the Services' EndpointSlices,
				// companion-stays-running the pods' status, and
				// services-stay-up the kubelet's stops.
				fromRunner = sorted(append(fromRunner, "list on apps/replicasets", "list on discovery.k8s.io/endpointslices", "get on pods", "list on events"))
			}
			if got := sorted(accessOf(t, scenarios.AccessOptions{InCluster: true, FromRunner: true}, tc.suite)); !slices.Equal(got, fromRunner) {
				t.Errorf("with --from-runner: got %q, want %q", got, fromRunner)
			}
			wantDisruptive := sorted(slices.Compact(sorted(append(slices.Clone(want), tc.disruptive...))))
			if got := sorted(accessOf(t, scenarios.AccessOptions{InCluster: true, Disruptive: true}, tc.suite)); !slices.Equal(got, wantDisruptive) {
				t.Errorf("with --disruptive: got %q, want %q", got, wantDisruptive)
			}
		})
	}
}

// TestDisruptiveAddsOnlyItsOwn: what --disruptive adds to a run's access
// is needed by disruptive scenarios alone, and each permission names
// the scenarios that need it.
func TestDisruptiveAddsOnlyItsOwn(t *testing.T) {
	disruptive := map[string]bool{}
	for _, su := range scenarios.Suites() {
		for _, sc := range su.Scenarios {
			disruptive[su.Name+"/"+sc.Name] = sc.Disruptive
		}
	}
	for _, names := range [][]string{nil, {"rotation"}, {"deployments", "rotation"}} {
		quiet := scenarios.Access(mustSelect(t, names), scenarios.AccessOptions{InCluster: true})
		loud := scenarios.Access(mustSelect(t, names), scenarios.AccessOptions{InCluster: true, Disruptive: true})
		for _, g := range loud {
			i := slices.IndexFunc(quiet, func(q scenarios.Grant) bool { return q.Permission == g.Permission })
			var added []string
			for _, who := range g.By {
				if i < 0 || !slices.Contains(quiet[i].By, who) {
					added = append(added, who)
				}
			}
			for _, who := range added {
				if !disruptive[who] {
					t.Errorf("suites %v: --disruptive adds %s for %s, which is no disruptive scenario", names, g.Permission, who)
				}
			}
		}
		for _, g := range quiet {
			for _, who := range g.By {
				if disruptive[who] {
					t.Errorf("suites %v: without --disruptive, %s is granted for the disruptive %s", names, g.Permission, who)
				}
			}
		}
	}
	// Rotation alone: without --disruptive only the discovery's reads.
	got := sorted(accessOf(t, scenarios.AccessOptions{InCluster: true}, "rotation"))
	if want := sorted(discoveryReads); !slices.Equal(got, want) {
		t.Errorf("rotation without --disruptive: got %q, want %q", got, want)
	}
}

// TestAccessFollowsRun: --run leaves out the access of the scenarios it
// does not select.
func TestAccessFollowsRun(t *testing.T) {
	o := scenarios.AccessOptions{InCluster: true, Run: regexp.MustCompile("^ldap/wrong-ca-refused$")}
	got := sorted(accessOf(t, o, "ldap"))
	if want := sorted(discoveryReads); !slices.Equal(got, want) {
		t.Errorf("ldap/wrong-ca-refused alone: got %q, want %q", got, want)
	}
	o.Run = regexp.MustCompile("plain-port")
	got = sorted(accessOf(t, o, "ldap"))
	if want := sorted([]string{"list on pods", "get on services", "get on apps/deployments"}); !slices.Equal(got, want) {
		t.Errorf("ldap/plain-port-not-on-service: got %q, want %q", got, want)
	}
}

// TestGrantsNameWhoNeedsThem: each permission names the discovery or
// the scenarios that need it.
func TestGrantsNameWhoNeedsThem(t *testing.T) {
	for _, g := range scenarios.Access(scenarios.Suites(), scenarios.AccessOptions{}) {
		switch g.Permission.String() {
		case "create on pods/portforward":
			// Besides the discovery, the scenarios that connect to a
			// role's database, which a pod may serve.
			if g.By[0] != "discovery" || slices.ContainsFunc(g.By[1:], func(who string) bool {
				return !slices.Contains([]string{"postgres/data-outside-pod", "postgres/one-opentofu-state", "secrets/files-hold-their-values"}, who)
			}) {
				t.Errorf("%s is needed by %v, want the discovery and the scenarios that reach a role's database", g.Permission, g.By)
			}
		case "create on pods/exec":
			if slices.Contains(g.By, "discovery") || !slices.Contains(g.By, "units/units-where-their-lists-permit") {
				t.Errorf("%s is needed by %v", g.Permission, g.By)
			}
		}
	}
}

// TestRulesGroupVerbsByResource: a Role's rule per group and resource.
func TestRulesGroupVerbsByResource(t *testing.T) {
	rules := scenarios.Rules(scenarios.Access(scenarios.Suites(), scenarios.AccessOptions{Disruptive: true}))
	var got []string
	for _, r := range rules {
		got = append(got, strings.Join([]string{strings.Join(r.APIGroups, ","), strings.Join(r.Resources, ","), strings.Join(r.Verbs, ",")}, " "))
	}
	want := []string{" events list", " pods get,list", " pods/attach create", " pods/ephemeralcontainers update", " pods/exec create", " pods/portforward create", " services get,list", "apps deployments get", "apps replicasets list", "discovery.k8s.io endpointslices list"}
	if !slices.Equal(got, want) {
		t.Errorf("rules:\n got %q\nwant %q", got, want)
	}
}

func mustSelect(t *testing.T, names []string) []*scenarios.Suite {
	t.Helper()
	suites, err := scenarios.Select(names)
	if err != nil {
		t.Fatal(err)
	}
	return suites
}

func sorted(words []string) []string {
	out := slices.Clone(words)
	slices.Sort(out)
	return out
}
