package rolepublisher_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/harness/rolepublisher"
	"github.com/fediversity/podroles/harness/testenv"
	"github.com/fediversity/podroles/internal/openbao"
	"github.com/fediversity/podroles/internal/pki"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/internal/synclog"
	"github.com/fediversity/podroles/inventory"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestPublisherFollowsTheDirectory runs the stand-in against the local
// environment's real slapd replicas and OpenBao, as the contract's
// reader. While the role does not answer (a door in front of its Service
// that closes every connection), it says why and tries again, with no
// exit; once the role answers, it publishes the group's members; a member
// added to the directory then gets to the entry.
func TestPublisherFollowsTheDirectory(t *testing.T) {
	env := testenv.NewEnv(t, localenv.Options{})
	if env.Servers().OpenBaoURL() == "" {
		t.Skip("no OpenBao in the environment (make servers builds Vault)")
	}
	base, err := inventory.LoadBase(env.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	rootToken, err := inventory.ReadSecret(base.OpenBao.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte(rootToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	service := base.Roles["lldap"].Service
	door := newDoor(t, net.JoinHostPort(service.Address, strconv.Itoa(localenv.PortLDAPS)))
	const group, path = "lldap_admin", "secret/data/rolepublisher-test/published-roles"
	c := rolepublisher.Config{
		LDAPS: net.JoinHostPort(service.Name, strconv.Itoa(localenv.PortLDAPS)), Dial: door.addr,
		CAFile: env.Servers().MainPodFile(env.Servers().LDAPCAFile()), BindDN: base.LDAP.BindDN,
		BindPasswordFile: env.Servers().MainPodFile(env.Servers().ReaderPasswordFile()), BaseDN: base.LDAP.BaseDN, Group: group,
		OpenBao: env.Servers().OpenBaoURL(), TokenFile: token, Path: path, Interval: "200ms",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, stop := context.WithCancel(ctx)
	var log synclog.Buffer
	done := make(chan error, 1)
	go func() { done <- rolepublisher.Run(run, c, &log) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("the publisher ended with %v", err)
		}
	}()

	wait := func(expect string, ok func() error) {
		t.Helper()
		if err := poll.Eventually(ctx, poll.Probe{Endpoint: "the publisher", Expect: expect, Within: time.Minute}, func(context.Context) error { return ok() }); err != nil {
			t.Fatalf("%v (its log: %s)", err, log.String())
		}
	}
	wait("two failed tries at a directory that does not answer, told", func() error {
		if n := strings.Count(log.String(), "the directory at "+c.LDAPS); n < 2 {
			return poll.Saw("%d: %q", n, log.String())
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("the publisher ended while the directory did not answer: %v", err)
	default:
	}
	bao := openbao.New(c.OpenBao, rootToken)
	if _, err := bao.KV(ctx, path); err == nil {
		t.Fatal("an entry was published while the directory did not answer")
	}

	published := func(want string) func() error {
		return func() error {
			entry, err := bao.KV(ctx, path)
			if err != nil {
				return poll.Saw("%v", err)
			}
			if entry[group] != want {
				return poll.Saw("%v", entry)
			}
			return nil
		}
	}
	door.open()
	wait("the group's members published", published("admin"))
	if err := env.Servers().AddMember(ctx, group, "authelia-bind"); err != nil {
		t.Fatal(err)
	}
	wait("the new member published", published("admin,authelia-bind"))
}

// TestPublisherStopsWhileTheDirectoryHolds: a directory that takes the
// connection and never answers holds a look up to its limit, here an
// hour; the unit's stop (ctx) ends it at once. Nothing else is needed:
// the look never gets past the TLS handshake.
func TestPublisherStopsWhileTheDirectoryHolds(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if conn, err := l.Accept(); err == nil {
			accepted <- conn
		}
	}()
	// The look reads the CA before it connects; it never gets to use it.
	ca, err := pki.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, content := range map[string]string{"ca.pem": string(ca.PEM), "password": "reader\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := rolepublisher.Config{
		LDAPS: "lldap.directory.svc:636", Dial: l.Addr().String(), CAFile: filepath.Join(dir, "ca.pem"),
		BindDN: "uid=reader", BindPasswordFile: filepath.Join(dir, "password"), BaseDN: "dc=example", Group: "g",
		OpenBao: "http://127.0.0.1:1", TokenFile: filepath.Join(dir, "token"), Path: "secret/data/x", LookTimeout: "1h",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rolepublisher.Run(run, c, io.Discard) }()
	select {
	case conn := <-accepted:
		defer conn.Close()
	case <-ctx.Done():
		t.Fatal("the publisher never connected")
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the publisher ended with %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the publisher went on waiting on the directory after its stop")
	}
}

// door stands in front of an address: while shut, it closes every
// connection at once, as a role with no ready pod behind its Service;
// once open, it passes them through.
type door struct {
	addr    string
	mu      sync.Mutex
	through bool
}

func newDoor(t *testing.T, to string) *door {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	d := &door{addr: l.Addr().String()}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			d.mu.Lock()
			through := d.through
			d.mu.Unlock()
			if !through {
				conn.Close()
				continue
			}
			go d.pass(conn, to)
		}
	}()
	return d
}

func (d *door) open() {
	d.mu.Lock()
	d.through = true
	d.mu.Unlock()
}

func (d *door) pass(conn net.Conn, to string) {
	defer conn.Close()
	back, err := net.Dial("tcp", to)
	if err != nil {
		return
	}
	defer back.Close()
	go io.Copy(back, conn)
	io.Copy(conn, back)
}

// TestLoadRefusesAnIncompleteConfiguration names the field that is
// missing or wrong.
func TestLoadRefusesAnIncompleteConfiguration(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ config, says string }{
		{`{"ldaps": "h:1", "caFile": "c", "bindDN": "b", "bindPasswordFile": "p", "baseDN": "d", "group": "g", "openbao": "o", "tokenFile": "t"}`, "no path"},
		{`{"ldaps": "h:1", "caFile": "c", "bindDN": "b", "bindPasswordFile": "p", "baseDN": "d", "group": "g", "openbao": "o", "tokenFile": "t", "path": "x", "interval": "soon"}`, "interval"},
		{`{"ldaps": "h:1", "caFile": "c", "bindDN": "b", "bindPasswordFile": "p", "baseDN": "d", "group": "g", "openbao": "o", "tokenFile": "t", "path": "x", "lookTimeout": "0s"}`, "lookTimeout: 0s is not a wait"},
		{`{"ldaps": `, "unexpected end"},
	} {
		file := filepath.Join(dir, "config.json")
		if err := os.WriteFile(file, []byte(c.config), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := rolepublisher.Load(file); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Load(%s): %v, want an error saying %q", c.config, err, c.says)
		}
	}
	if _, err := rolepublisher.Load(filepath.Join(dir, "none.json")); err == nil {
		t.Error("Load of a missing file: no error")
	}
}
