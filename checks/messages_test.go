package checks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/report"
)

func TestDNSLabelProblems(t *testing.T) {
	cases := map[string]string{
		"mastodon":              "",
		"mastodon-sidekiq-0":    "",
		strings.Repeat("a", 63): "",
		strings.Repeat("a", 64): "it has 64 characters, more than 63",
		"Mastodon":              "it has 'M', where only a-z, 0-9 and - may stand",
		"sidekiq_all.x":         "it has '_' and '.', where only a-z, 0-9 and - may stand",
		"-web":                  "it starts with -",
		"web-":                  "it ends with -",
		"":                      "it is empty",
		"-Web_-":                "it has 'W' and '_', where only a-z, 0-9 and - may stand, it starts with - and it ends with -",
	}
	for name, want := range cases {
		if got := joinAnd(dnsLabelProblems(name)); got != want {
			t.Errorf("dnsLabelProblems(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestMessagesQuoteNames: an option path in a message is one a user can
// paste into Nix, its names quoted where they are no identifiers.
func TestMessagesQuoteNames(t *testing.T) {
	two := 2
	n := &facts.Node{
		Name: "web", Units: map[string]facts.Unit{},
		PodRoles: facts.PodRoles{Roles: map[string]facts.Role{"2fa": {Replicas: &two}}, Services: map[string]facts.Service{}},
		K8sPod:   facts.K8sPod{Enable: true},
	}
	res := CheckNode(n, Rules())
	var found bool
	for _, f := range res.Findings {
		if f.Rule == "PR202" {
			found = true
			if !strings.Contains(f.Message, `fediversity.podRoles.roles."2fa".units`) {
				t.Errorf("PR202 does not quote the role: %s", f.Message)
			}
		}
	}
	if !found {
		t.Fatalf("no PR202 for a requested role without units: %+v", res.Findings)
	}
}

// TestPR607SaysWhichConditionFailed: the finding names the condition of a
// DNS-1123 label that the name breaks.
func TestPR607SaysWhichConditionFailed(t *testing.T) {
	one := 1
	for name, want := range map[string]string{
		"Mastodon": "it has 'M', where only a-z, 0-9 and - may stand",
		"web-":     "it ends with -",
	} {
		n := &facts.Node{Name: name, Source: "file:x.nix", Units: map[string]facts.Unit{"a": {Enable: true}},
			PodRoles: facts.PodRoles{Roles: map[string]facts.Role{"r": {Replicas: &one, Units: []string{"a"}}}},
			K8sPod:   facts.K8sPod{Enable: true}}
		res := CheckNode(n, Rules())
		var msgs []string
		for _, f := range res.Findings {
			if f.Rule == "PR607" {
				msgs = append(msgs, f.Message)
			}
		}
		if len(msgs) != 1 || !strings.Contains(msgs[0], want) {
			t.Errorf("node %q: PR607 says %q, want it to say %q", name, msgs, want)
		}
	}
}

// TestPR604TemplateHintFollowsTheSecret: the template PR604 proposes for a
// field in the URL alphabet reads the secret's own field, and says that it
// replaces field and encoding (a template beside them is PR303's).
func TestPR604TemplateHintFollowsTheSecret(t *testing.T) {
	one := 1
	field, encoding := "crt", "base64url"
	n := &facts.Node{Name: "web", Source: "file:x.nix", Units: map[string]facts.Unit{},
		ModularServices: []string{"api"},
		PodRoles: facts.PodRoles{Roles: map[string]facts.Role{"api": {Replicas: &one, Service: ptr("api"),
			Secrets: map[string]facts.Secret{"cert": {Path: "secret/data/api/tls", Field: &field, Encoding: &encoding}}}}},
		K8sPod: facts.K8sPod{Enable: true}}
	var msgs []string
	for _, f := range CheckNode(n, Rules()).Findings {
		if f.Rule == "PR604" {
			msgs = append(msgs, f.Message)
		}
	}
	want := `{{ with secret "secret/data/api/tls" }}{{ index .Data.data "crt" | base64URLDecode }}{{ end }}`
	if len(msgs) != 1 || !strings.Contains(msgs[0], want) || !strings.Contains(msgs[0], "in place of its field and encoding") {
		t.Errorf("PR604 says %q, want the template %s in place of its field and encoding", msgs, want)
	}
}

func ptr[T any](v T) *T { return &v }

// TestRelativeThroughALinkedWorkingDirectory: nix reads a flake at its real
// path; from a working directory reached through a link, its files are
// still shown relative to the working directory.
func TestRelativeThroughALinkedWorkingDirectory(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "src")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	res := []*Result{{Node: "web", Source: "flake:x#web", Findings: []Finding{{Rule: "PR101", place: at(opt("fediversity", "podRoles", "mainUnits"))}}}}
	locator := func(context.Context, map[facts.NodeRef][]facts.OptionRef) (map[facts.NodeRef][][]facts.Definition, error) {
		return map[facts.NodeRef][][]facts.Definition{{Name: "web", Source: "flake:x#web"}: {{{Location: facts.Location{File: filepath.Join(real, "hosts", "web.nix"), Line: 3, Column: 5}, Priority: facts.PriorityPlain}}}}, nil
	}
	if err := Locate(t.Context(), res, locator, report.NewPaths(link)); err != nil {
		t.Fatal(err)
	}
	if got := res[0].Findings[0].Location; got == nil || got.File != filepath.Join("hosts", "web.nix") {
		t.Errorf("location %v, want hosts/web.nix", got)
	}
}
