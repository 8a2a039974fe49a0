package scenarios

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// The replicas of a role restart together for one new value (Known
// Deviations): exits a render interval and a restart's reaction apart
// fail, naming both pods; closer ones pass; one replica has nothing to
// compare.
func TestRestartedTogether(t *testing.T) {
	at := func(sec int) *inventory.Exit { return &inventory.Exit{FinishedAt: time.Unix(int64(1000+sec), 0)} }
	s := &State{}
	if err := restartedTogether(s, "lldap", map[string]*inventory.Exit{"a": at(0), "b": at(4)}, 2*time.Second); err != nil {
		t.Errorf("4 s apart, with a 2 s render interval: %v", err)
	}
	err := restartedTogether(s, "lldap", map[string]*inventory.Exit{"a": at(0), "b": at(30), "c": at(1)}, 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "restarted 30s apart (pod a at") || !strings.Contains(err.Error(), "pod b at") {
		t.Errorf("30 s apart: %v", err)
	}
	if err := restartedTogether(s, "lldap", map[string]*inventory.Exit{"a": at(0)}, time.Second); err != nil {
		t.Errorf("one replica: %v", err)
	}
}

// renderingWorld is a world whose pods' agents render at interval, as a
// cluster's agent configuration would say.
type renderingWorld struct {
	world.World
	interval time.Duration
}

func (w renderingWorld) RenderInterval(context.Context, inventory.Endpoint) (time.Duration, string, error) {
	return w.interval, "the pod's agent configuration", nil
}

// The copies of the reader's password are waited for the longer of the
// lldap role's agents' interval and the inventory's word, which is the
// only one for the main pod's agent.
func TestReaderRender(t *testing.T) {
	inv := func(stated string) *inventory.Inventory {
		return &inventory.Inventory{
			LDAP:    &inventory.LDAP{Role: "lldap"},
			Roles:   map[string]*inventory.Role{"lldap": {Pods: []inventory.Endpoint{{Name: "directory-lldap-0"}}}},
			OpenBao: &inventory.OpenBao{RenderInterval: stated},
		}
	}
	for _, c := range []struct {
		stated string
		agents time.Duration
		want   time.Duration
		where  string
	}{
		{"5m", 2 * time.Second, 5 * time.Minute, "the inventory's openbao.renderInterval, which the main pod's agent follows"},
		{"1s", 2 * time.Second, 2 * time.Second, "the pod's agent configuration"},
	} {
		got, where := readerRender(context.Background(), renderingWorld{world.Files(inv(c.stated)), c.agents})
		if got != c.want || where != c.where {
			t.Errorf("inventory %s, agents %s: %s (%s), want %s (%s)", c.stated, c.agents, got, where, c.want, c.where)
		}
	}
}

// The exit's reason, code and word tell a restart for a file from a kill,
// a restart for other files, or a crash; an exit that says nothing may be
// the restart. A kill is no restart for anything.
func TestNoRestartFor(t *testing.T) {
	for _, c := range []struct {
		name string
		exit *inventory.Exit
		want string
	}{
		{"the restart for jwt", &inventory.Exit{Code: 0, Message: inventory.RestartMessagePrefix + "jwt, tls.pem"}, ""},
		{"an exit that says nothing", &inventory.Exit{Code: 0}, ""},
		{"a restart for another file", &inventory.Exit{Message: inventory.RestartMessagePrefix + "tls.pem"}, "for tls.pem, not jwt"},
		{"a crash that says so", &inventory.Exit{Code: 3, Message: "pod p: the service exited with status 3"}, "which is no restart for jwt: a crash"},
		{"an OOM kill", &inventory.Exit{Code: 137, Reason: "OOMKilled"}, "its service was killed (exit code 137 (OOMKilled)"},
		{"a SIGKILL that says nothing", &inventory.Exit{Code: 137, Reason: "Error"}, "which is no restart for jwt"},
	} {
		got := noRestartFor(c.exit, "jwt")
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := killedNoRestart(&inventory.Exit{Code: 137}, "a new credential"); !strings.Contains(got, "which is no restart for a new credential") {
		t.Errorf("a kill after a rotation of the credential: %q", got)
	}
	if got := killedNoRestart(&inventory.Exit{Code: 0, Message: inventory.RestartMessagePrefix + "db.env"}, "a new credential"); got != "" {
		t.Errorf("the restart for the credential: %q", got)
	}
}
