package world

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/internal/kube"
)

// TestTokenRead: only cat's own word that the token is absent or
// unreadable counts as "cannot read"; a token printed is read, and any
// other failure (an image whose cat does not run the token's path, an
// exec that broke) cannot be judged.
func TestTokenRead(t *testing.T) {
	const token = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	exited := func(status int, stderr string) error {
		return &kube.ExitError{What: `exec "cat ` + token + `" in pod ns/p (container c)`, Status: status, Stderr: stderr}
	}
	cases := []struct {
		name    string
		out     string
		err     error
		reason  string
		wantErr string
	}{
		{"absent", "", exited(1, "cat: "+token+": No such file or directory"), "no such file or directory", ""},
		{"unreadable", "", exited(1, "cat: "+token+": Permission denied"), "permission denied", ""},
		{"busybox, absent", "", exited(1, "cat: can't open '"+token+"': No such file or directory"), "no such file or directory", ""},
		{"read", "eyJhbGciOi", nil, "", "reads the pod's service-account token " + token + ": the service could act as the pod"},
		{"empty", "", nil, "", "which is empty: cannot judge"},
		{"no cat in the image", "", exited(127, `exec: "cat": executable file not found in $PATH`), "", "cannot judge whether it reads " + token},
		{"a runtime that finds no cat", "", exited(126, "OCI runtime exec failed: stat /bin/cat: No such file or directory"), "", "cannot judge whether it reads"},
		{"another failure of cat", "", exited(1, "cat: "+token+": Input/output error"), "", "cannot judge whether it reads"},
		{"exec broke", "", errors.New(`exec "cat ` + token + `" in pod ns/p (container c): connection reset by peer`), "", "connection reset by peer"},
	}
	for _, c := range cases {
		reason, err := tokenRead(token, []byte(c.out), c.err)
		switch {
		case c.wantErr == "" && (err != nil || reason != c.reason):
			t.Errorf("%s: %q, %v; want %q", c.name, reason, err, c.reason)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: %q, %v; want an error naming %q", c.name, reason, err, c.wantErr)
		}
	}
}

// The pod's own clock: its container's start from the clock, the uptime
// and the first process's start in ticks; the files to the nanosecond.
func TestParseFinerClock(t *testing.T) {
	stat := "1 (podroles pod supervisor) S 0 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 5000 1000 200"
	out := "1000.500000000\n200.25 300.00\n" + stat + "\n100\n980.123456789 /run/secrets/jwt\n"
	clock, err := parseFinerClock(out)
	if err != nil {
		t.Fatal(err)
	}
	// 1000.5 - 200.25 + 5000/100 = 850.25
	if want := time.Unix(850, 250000000); !clock.Start.Equal(want) {
		t.Errorf("start %v, want %v", clock.Start, want)
	}
	if got := clock.Written["jwt"]; got.Sub(time.Unix(980, 123456789)).Abs() > time.Microsecond {
		t.Errorf("jwt written %v", got)
	}
	if !clock.Under.IsZero() {
		t.Errorf("no process under the first, yet %v", clock.Under)
	}
	// The processes the first one started: the earliest counts.
	child := func(ticks string) string {
		return "child 7 (lldap (stand-in)) S 1 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 " + ticks + " 1000 200\n"
	}
	clock, err = parseFinerClock(out + child("5030") + child("5010"))
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Unix(850, 350000000); !clock.Under.Equal(want) {
		t.Errorf("under %v, want %v", clock.Under, want)
	}
	if _, err := parseFinerClock("sh: date: not found\n"); err == nil {
		t.Error("no clock parsed")
	}
}

// The agent's render interval is read from its configuration as it runs:
// JSON (an object or HCL's list), HCL, a number of seconds, or the
// agent's default where nothing sets it.
func TestParseRenderInterval(t *testing.T) {
	for config, want := range map[string]string{
		`{"template_config": {"static_secret_render_interval": "2s"}}`:     "2s set",
		`{"template_config": [{"static_secret_render_interval": "30s"}]}`:  "30s set",
		`{"template_config": {"static_secret_render_interval": 10}}`:       "10s set",
		`{"vault": {"address": "http://x"}}`:                               "5m0s default",
		"template_config {\n  static_secret_render_interval = \"1m\"\n}\n": "1m0s set",
		"vault {\n  address = \"http://x\"\n}\n":                           "5m0s default",
	} {
		d, set, err := parseRenderInterval([]byte(config))
		got := d.String() + " default"
		if set {
			got = d.String() + " set"
		}
		if err != nil || got != want {
			t.Errorf("%s: %s, %v; want %s", config, got, err, want)
		}
	}
	if _, _, err := parseRenderInterval([]byte(`{"template_config": {"static_secret_render_interval": "soon"}}`)); err == nil {
		t.Error("a value that is no duration was taken")
	}
	for argv, want := range map[string]string{
		"bao agent -config=/etc/agent/agent.json": "/etc/agent/agent.json",
		"vault agent --config /a.hcl":             "/a.hcl",
		"bao agent":                               "",
	} {
		if got := agentConfigFlag(strings.Fields(argv)); got != want {
			t.Errorf("%s: %q, want %q", argv, got, want)
		}
	}
}

// /proc/PID/environ is NAME=VALUE entries each ended by a NUL; a value
// may hold '='.
func TestParseEnviron(t *testing.T) {
	got := parseEnviron([]byte("A=1\x00B=x=y\x00EMPTY=\x00"))
	if len(got) != 3 || got["A"] != "1" || got["B"] != "x=y" || got["EMPTY"] != "" {
		t.Errorf("got %v", got)
	}
}

// The process list is read from "PID COMM" lines, sorted by PID; a
// program's name may hold spaces.
func TestParseProcesses(t *testing.T) {
	got := parseProcesses("12 cat\n1 podroles\n7 slapd\n30 my prog\n\nnot a line\n")
	want := []Process{{1, "podroles"}, {7, "slapd"}, {12, "cat"}, {30, "my prog"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
