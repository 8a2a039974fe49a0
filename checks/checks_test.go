package checks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fediversity/podroles/facts"
)

func TestRulesAreWellFormed(t *testing.T) {
	seen := map[string]bool{}
	prev := ""
	for _, r := range Rules() {
		if seen[r.ID] || seen[r.Name] {
			t.Errorf("%s %s: ID or name used twice", r.ID, r.Name)
		}
		seen[r.ID], seen[r.Name] = true, true
		if r.ID <= prev {
			t.Errorf("%s comes after %s: keep rules in ID order", r.ID, prev)
		}
		prev = r.ID
		if r.Spec == "" || r.Doc == "" || strings.Contains(r.Doc, "\n") || r.check == nil {
			t.Errorf("%s: a rule needs a spec reference, a one-line doc and a check", r.ID)
		}
		if r.Severity != SeverityError && r.Severity != SeverityWarning {
			t.Errorf("%s: severity %q", r.ID, r.Severity)
		}
		paragraphs := strings.Split(r.Long(), "\n\n")
		if !strings.HasPrefix(paragraphs[len(paragraphs)-1], "Fix: ") || !strings.Contains(r.Long(), strings.SplitN(r.Spec, ",", 2)[0]) {
			t.Errorf("%s: the long text must cite the rule's spec (%s) and end in how to fix a node (\"Fix: \")", r.ID, r.Spec)
		}
	}
	files, err := explainFiles.ReadDir("explain")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if id := strings.TrimSuffix(f.Name(), ".md"); !seen[id] {
			t.Errorf("explain/%s explains no rule", f.Name())
		}
	}
}

func TestNearest(t *testing.T) {
	units := []string{"mastodon-sidekiq-all", "mastodon-web", "mastodon-streaming", "nginx"}
	cases := map[string]string{
		"mastodon-sidekiq":  "mastodon-sidekiq-all",
		"mastodon-wbe":      "mastodon-web",
		"nginx.service":     "nginx",
		"postgresql":        "",
		"mastodon-stream-1": "mastodon-streaming",
		"x":                 "",
	}
	for name, want := range cases {
		if got := nearest(name, units); got != want {
			t.Errorf("nearest(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestFirewallOpens(t *testing.T) {
	fw := facts.Firewall{Enable: true, PortLists: facts.PortLists{
		AllowedTCPPorts: []int{80}, AllowedUDPPortRanges: []facts.PortRange{{From: 5000, To: 5010}},
	}, Interfaces: map[string]facts.PortLists{"eth0": {AllowedTCPPorts: []int{9100}}}}
	cases := []struct {
		proto string
		port  int
		want  bool
	}{
		{"TCP", 80, true}, {"UDP", 80, false}, {"UDP", 5000, true}, {"UDP", 5010, true}, {"UDP", 5011, false},
		{"TCP", 5005, false}, {"TCP", 9100, true}, {"TCP", 22, false},
	}
	for _, c := range cases {
		if got := fw.Opens(c.proto, c.port); got != c.want {
			t.Errorf("Opens(%s, %d) = %v", c.proto, c.port, got)
		}
	}
	fw.Enable = false
	if !fw.Opens("TCP", 22) {
		t.Error("a disabled firewall opens every port")
	}
}

// TestRulesLiveWithTheirFamily: each rule's function is in the file of
// its family, as its ID numbers it (docs/rules.md links it there).
func TestRulesLiveWithTheirFamily(t *testing.T) {
	families := map[string]string{"PR1": "units", "PR2": "roles", "PR3": "secrets", "PR4": "ports", "PR50": "lldap", "PR51": "authelia", "PR6": "input"}
	for _, r := range Rules() {
		file, name := r.Func()
		var want string
		for prefix := range families {
			if strings.HasPrefix(r.ID, prefix) && len(prefix) > len(want) {
				want = prefix
			}
		}
		wantFile := "rules_" + families[want] + ".go"
		// The plan's names, which PR613 and PR614 judge, have a file of
		// their own.
		if r.ID == "PR613" || r.ID == "PR614" {
			wantFile = "collide.go"
		}
		if filepath.Base(file) != wantFile || name == "" {
			t.Errorf("%s is judged by %s in %s, want a function in %s", r.ID, name, file, wantFile)
			continue
		}
		// docs/rules.md links the name: a function of that file.
		if src, err := os.ReadFile(file); err != nil || !strings.Contains(string(src), "\nfunc "+name+"(") {
			t.Errorf("%s: %s names no function of %s (%v)", r.ID, name, file, err)
		}
	}
}
