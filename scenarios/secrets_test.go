package scenarios

import (
	"errors"
	"strings"
	"testing"
)

// TestTokenRead: only cat's own word that the token is absent or
// unreadable counts as "cannot read"; a token printed is read, and any
// other failure (an image whose cat does not run the token's path, an
// exec that broke) cannot be judged.
func TestTokenRead(t *testing.T) {
	const token = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	exec := `exec "cat ` + token + `" in pod ns/p (container c): `
	cases := []struct {
		name    string
		out     string
		err     error
		reason  string
		wantErr string
	}{
		{"absent", "", errors.New(exec + "exited with status 1: cat: " + token + ": No such file or directory"), "no such file or directory", ""},
		{"unreadable", "", errors.New(exec + "exited with status 1: cat: " + token + ": Permission denied"), "permission denied", ""},
		{"busybox, absent", "", errors.New(exec + "exited with status 1: cat: can't open '" + token + "': No such file or directory"), "no such file or directory", ""},
		{"read", "eyJhbGciOi", nil, "", "reads the pod's service-account token " + token + ": the service could act as the pod"},
		{"empty", "", nil, "", "which is empty: cannot judge"},
		{"no cat in the image", "", errors.New(exec + `exited with status 127: exec: "cat": executable file not found in $PATH`), "", "cannot judge whether it reads " + token},
		{"a runtime that finds no cat", "", errors.New(exec + "exited with status 126: OCI runtime exec failed: stat /bin/cat: No such file or directory"), "", "cannot judge whether it reads"},
		{"another failure of cat", "", errors.New(exec + "exited with status 1: cat: " + token + ": Input/output error"), "", "cannot judge whether it reads"},
		{"exec broke", "", errors.New(exec + "connection reset by peer"), "", "connection reset by peer"},
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
