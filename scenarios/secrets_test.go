package scenarios

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/inventory"
)

// A file of the second that the kubelet's start names is tied with it.
func TestTiedWithStart(t *testing.T) {
	start := time.Unix(100, 0)
	written := map[string]time.Time{"a": time.Unix(99, 0), "b": time.Unix(100, 0), "c": time.Unix(101, 0)}
	if got := tiedWithStart(written, start); !slices.Equal(got, []string{"b"}) {
		t.Errorf("tied %v", got)
	}
	if got := tiedWithStart(written, time.Unix(100, 5)); got != nil {
		t.Errorf("a start to the nanosecond ties nothing: %v", got)
	}
}

// TestSetFieldValue writes a value into a KV entry's data as each kind of
// field secret holds it, and reads it back as the agents render it; the
// entry's other variables and fields are kept.
func TestSetFieldValue(t *testing.T) {
	field, variable, base64 := "env", "PASS", "base64"
	for _, c := range []struct {
		name   string
		secret facts.Secret
		data   map[string]any
		want   map[string]any
	}{
		{"plain", facts.Secret{Field: &field}, map[string]any{"env": "old", "other": "x"}, map[string]any{"env": "new", "other": "x"}},
		{"base64", facts.Secret{Field: &field, Encoding: &base64}, map[string]any{"env": "b2xk"}, map[string]any{"env": "bmV3"}},
		{"variable", facts.Secret{Field: &field, Variable: &variable}, map[string]any{"env": "A=1\nPASS=old\nB=2\n"}, map[string]any{"env": "A=1\nPASS=new\nB=2\n"}},
		// base64 of "A=1\nPASS=old\n", then of "A=1\nPASS=new\n".
		{"variable in base64", facts.Secret{Field: &field, Variable: &variable, Encoding: &base64}, map[string]any{"env": "QT0xClBBU1M9b2xkCg=="}, map[string]any{"env": "QT0xClBBU1M9bmV3Cg=="}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := setFieldValue(c.data, c.secret, "new"); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.data, c.want) {
				t.Errorf("data = %q, want %q", c.data, c.want)
			}
			if got, err := fieldOf(c.data, c.secret); err != nil || got != "new" {
				t.Errorf("read back %q, %v", got, err)
			}
		})
	}
	// A variable the entry lacks is no place to write.
	if err := setFieldValue(map[string]any{"env": "A=1\n"}, facts.Secret{Path: "secret/data/x", Field: &field, Variable: &variable}, "new"); err == nil || !strings.Contains(err.Error(), "has no variable PASS") {
		t.Errorf("err = %v", err)
	}
}

// A secret with restart written after the container's first process
// started but before the process under it (a supervisor's service) did
// may have been read new: neither a restart due nor none.
func TestWrittenWhileStarting(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(100, int64(ms)*int64(time.Millisecond)) }
	written := map[string]time.Time{"jwt": at(862), "tls.pem": at(950), "db.env": at(100)}
	secrets := map[string]facts.Secret{"jwt": {Restart: true}, "tls.pem": {Restart: true}, "db.env": {Restart: true}}
	// What the scenario asks of it: the secrets with restart written
	// after the container's first process started.
	due, err := filesAfterStart(context.Background(), nil, nil, inventory.Endpoint{Name: "p"}, secrets, written, at(660), false)
	if err != nil || !slices.Equal(due, []string{"jwt", "tls.pem"}) {
		t.Fatalf("due %v, %v; want jwt and tls.pem", due, err)
	}
	if got := writtenWhileStarting(due, written, at(660), at(900)); !slices.Equal(got, []string{"jwt"}) {
		t.Errorf("got %v, want jwt: written between 660 and 900 ms", got)
	}
	if got := writtenWhileStarting(due, written, at(660), time.Time{}); len(got) != 0 {
		t.Errorf("no process under the first known: got %v", got)
	}
	if got := writtenWhileStarting(due, written, at(660), at(700)); len(got) != 0 {
		t.Errorf("both written after the service started: got %v", got)
	}
	if got := writtenAt(due, written); got != "jwt (written at "+at(862).Format(timeOfDay)+"), tls.pem (written at "+at(950).Format(timeOfDay)+")" {
		t.Errorf("named with their times: %s", got)
	}
}
