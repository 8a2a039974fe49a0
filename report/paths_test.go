package report

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPathsText(t *testing.T) {
	p := NewPaths("/home/me/platform")
	for text, want := range map[string]string{
		"getting status of '/home/me/platform/hosts/x.nix': No such file or directory": "getting status of 'hosts/x.nix': No such file or directory",
		"boom (at /home/me/platform/hosts/x.nix:3:5)":                                  "boom (at hosts/x.nix:3:5)",
		"/home/me/platform/flake.lock does not exist; run nix flake lock":              "flake.lock does not exist; run nix flake lock",
		"The option `a' is defined in `/home/me/platform/a.nix' and `/etc/b.nix'":      "The option `a' is defined in `a.nix' and `/etc/b.nix'",
		// URLs keep their paths; the folder itself, and its neighbours, stay.
		"flake git+file:///home/me/platform?dir=deploy#web": "flake git+file:///home/me/platform?dir=deploy#web",
		"flake path:/home/me/platform/deploy#web":           "flake path:/home/me/platform/deploy#web",
		"no flake.nix in /home/me/platform or above it":     "no flake.nix in /home/me/platform or above it",
		"see /home/me/platform-old/x.nix, /home/me/x.nix":   "see /home/me/platform-old/x.nix, /home/me/x.nix",
	} {
		if got := p.Text(text); got != want {
			t.Errorf("Text(%q)\n got  %q\n want %q", text, got, want)
		}
	}
	if got := (Paths{}).Text("/home/me/platform/x.nix"); got != "/home/me/platform/x.nix" {
		t.Errorf("without a base: %q", got)
	}
}

// TestPathsThroughALinkedBase: nix reads a flake at its real path; from a
// working directory reached through a link, its files are still shown
// relative to the working directory, in locations and in text.
func TestPathsThroughALinkedBase(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "src")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	p := NewPaths(link)
	file := filepath.Join(real, "hosts", "web.nix")
	if got := p.File(file); got != filepath.Join("hosts", "web.nix") {
		t.Errorf("File = %q", got)
	}
	if got := p.Text("boom (at " + file + ":1:2)"); got != "boom (at hosts/web.nix:1:2)" {
		t.Errorf("Text = %q", got)
	}
}

func TestWorkingBase(t *testing.T) {
	ws := t.TempDir()
	sub := filepath.Join(ws, "deploy")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	wd, _ := os.Getwd()
	t.Setenv("GITHUB_WORKSPACE", "")
	if got := WorkingBase(); got != wd {
		t.Errorf("outside CI: %q, want the working directory %q", got, wd)
	}
	t.Setenv("GITHUB_WORKSPACE", ws)
	if got := WorkingBase(); got != ws {
		t.Errorf("in CI: %q, want the checkout %q", got, ws)
	}
	t.Setenv("GITHUB_WORKSPACE", t.TempDir())
	if got := WorkingBase(); got != wd {
		t.Errorf("outside the checkout: %q, want the working directory %q", got, wd)
	}
}
