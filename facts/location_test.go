package facts

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/fediversity/podroles/internal/nixtest"
)

// TestAttrNameAsNixReadsIt writes attribute names as option paths do and has
// the real nix read each back: bare where Nix's grammar takes an identifier,
// quoted (with Nix's escapes) everywhere else.
func TestAttrNameAsNixReadsIt(t *testing.T) {
	nix := nixtest.Nix(t)
	bare := []string{"web", "x-1", "a'b", "_x", "or", "Worker_2", "__curPos", "true"}
	quoted := []string{"2fa", "db.env", "a b", "if", "inherit", "rec", "é", "${x}", `a"b`, `back\slash`, "line\nend", "tab\t", "", "-x", "$", "a$b", "$${x}", "ldap/bind-password"}
	var sets []string
	for _, name := range append(slices.Clone(bare), quoted...) {
		written := AttrName(name)
		if wantBare := slices.Contains(bare, name); wantBare != !strings.HasPrefix(written, `"`) {
			t.Errorf("AttrName(%q) = %s: bare %v, want bare %v", name, written, !wantBare, wantBare)
		}
		sets = append(sets, "(builtins.attrNames { "+written+" = null; })")
	}
	// stdout alone is the JSON: nix may warn on stderr.
	var stderr strings.Builder
	cmd := exec.Command(nix, "--extra-experimental-features", "nix-command", "--offline", "eval", "--json", "--expr", "[ "+strings.Join(sets, " ")+" ]")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nix refused the names as written: %v\n%s", err, stderr.String())
	}
	var read [][]string
	if err := json.Unmarshal(out, &read); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for i, name := range append(slices.Clone(bare), quoted...) {
		if len(read[i]) != 1 || read[i][0] != name {
			t.Errorf("nix reads %s as %q, want %q", AttrName(name), read[i], name)
		}
	}
}

func TestOptionPath(t *testing.T) {
	if got := OptionPath("fediversity", "podRoles", "roles", "2fa", "units"); got != `fediversity.podRoles.roles."2fa".units` {
		t.Errorf("OptionPath = %s", got)
	}
	if got := (Location{File: "hosts/a.nix", Line: 42, Column: 7}).String(); got != "hosts/a.nix:42:7" {
		t.Errorf("Location = %s", got)
	}
	if got := (Location{File: "hosts/a.nix"}).String(); got != "hosts/a.nix" {
		t.Errorf("Location without a line = %s", got)
	}
}

func TestOptionPathOfReadsOptionPath(t *testing.T) {
	for _, names := range [][]string{
		{"fediversity", "podRoles", "roles", "web", "replicas"},
		{"fediversity", "podRoles", "roles", "2fa", "units"},
		{"systemd", "services", `a "b".c\d${e}` + "\n", "enable"},
		{"x", "if", "y"},
	} {
		if got := OptionPathOf(OptionPath(names...)); !slices.Equal(got, names) {
			t.Errorf("OptionPathOf(%s) = %q, want %q", OptionPath(names...), got, names)
		}
	}
	if got := OptionPathOf(`fediversity.podRoles.roles.web.units[0]`); !slices.Equal(got, []string{"fediversity", "podRoles", "roles", "web", "units"}) {
		t.Errorf("a list entry: %q", got)
	}
}
