// Package rolepublisher stands in for the platform's unit
// lldap-publish-roles in the test cluster's main pod (US2-11, SC-004).
// It reads the members of a group of the directory through the ldap
// contract (the role's Service over LDAPS, the contract's CA, the
// reader's password file) and writes them to a KV entry of OpenBao with the token of the
// main pod's agent. It never stops on a failure: while the role does
// not answer, it says why and tries again, so that its unit waits with
// no failed state, and it publishes once the role answers; then it
// looks again at each interval, so that a new member gets to the entry.
//
// What the platform's unit writes, and where, the spec does not say:
// this stand-in writes one field named after the group, its members'
// user names joined by commas (ldapgroup.List), at the path its
// configuration gives, and the inventory names the same path for the
// suites. It proves the contract's side (the role's Service, its CA,
// the reader's file, a grant to write from the main pod); the
// platform's own unit proves its format only on the platform.
package rolepublisher

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/fediversity/podroles/internal/ldapgroup"
	"github.com/fediversity/podroles/internal/openbao"
)

// Config is what the stand-in reads: the ldap contract's coordinates,
// the group, and where to publish.
type Config struct {
	// LDAPS is the role's Service, host:port; its host is the name the
	// certificate must be valid for.
	LDAPS string `json:"ldaps"`
	// Dial, if set, is where to connect instead of LDAPS's host (an
	// address the name does not resolve to outside a cluster).
	Dial             string `json:"dial,omitempty"`
	CAFile           string `json:"caFile"`
	BindDN           string `json:"bindDN"`
	BindPasswordFile string `json:"bindPasswordFile"`
	BaseDN           string `json:"baseDN"`
	Group            string `json:"group"`
	// OpenBao is the server's URL; TokenFile the main pod's agent's
	// token (its file sink), read at each write.
	OpenBao   string `json:"openbao"`
	TokenFile string `json:"tokenFile"`
	// Path is the KV v2 entry (secret/data/...).
	Path string `json:"path"`
	// Interval is how long it waits between two looks (a Go duration).
	Interval string `json:"interval"`
	// LookTimeout bounds one look at the directory (a Go duration; ten
	// seconds if empty): a directory that takes the connection and never
	// answers holds the publisher no longer.
	LookTimeout string `json:"lookTimeout,omitempty"`
}

// Load reads a configuration file.
func Load(file string) (Config, error) {
	var c Config
	data, err := os.ReadFile(file)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("%s: %w", file, err)
	}
	for _, wait := range []struct {
		name  string
		parse func() (time.Duration, error)
	}{{"interval", c.interval}, {"lookTimeout", c.lookTimeout}} {
		d, err := wait.parse()
		if err == nil && d <= 0 {
			err = fmt.Errorf("%s is not a wait", d)
		}
		if err != nil {
			return c, fmt.Errorf("%s: %s: %w", file, wait.name, err)
		}
	}
	for name, v := range map[string]string{"ldaps": c.LDAPS, "caFile": c.CAFile, "bindDN": c.BindDN, "bindPasswordFile": c.BindPasswordFile,
		"baseDN": c.BaseDN, "group": c.Group, "openbao": c.OpenBao, "tokenFile": c.TokenFile, "path": c.Path} {
		if v == "" {
			return c, fmt.Errorf("%s: no %s", file, name)
		}
	}
	return c, nil
}

func (c Config) lookTimeout() (time.Duration, error) {
	if c.LookTimeout == "" {
		return 10 * time.Second, nil
	}
	return time.ParseDuration(c.LookTimeout)
}

func (c Config) interval() (time.Duration, error) {
	if c.Interval == "" {
		return 5 * time.Second, nil
	}
	return time.ParseDuration(c.Interval)
}

// Run publishes until ctx ends, logging each publication and each
// failure to log.
func Run(ctx context.Context, c Config, log io.Writer) error {
	every, err := c.interval()
	if err != nil {
		return err
	}
	// One client for every look: its connections are kept and reused.
	bao := openbao.New(c.OpenBao, "")
	for {
		members, changed, err := c.publish(ctx, bao)
		switch {
		case err != nil:
			fmt.Fprintf(log, "lldap-publish-roles: %v; trying again in %s\n", err, every)
		case changed:
			fmt.Fprintf(log, "lldap-publish-roles: published the %d members of group %s to %s: %s\n", len(members), c.Group, c.Path, ldapgroup.List(members))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// publish reads the group's members and writes them where the entry
// holds another list: an entry rewritten at each look would pile up
// versions.
func (c Config) publish(ctx context.Context, bao *openbao.Client) ([]string, bool, error) {
	members, err := c.members(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("the directory at %s: %w", c.LDAPS, err)
	}
	token, err := os.ReadFile(c.TokenFile)
	if err != nil {
		return nil, false, fmt.Errorf("the agent's token: %w", err)
	}
	// Read at each look: the agent writes a new token when it logs in
	// again.
	bao.Token = strings.TrimSpace(string(token))
	want := ldapgroup.List(members)
	held, err := bao.KV(ctx, c.Path)
	var missing *openbao.Error
	switch {
	case errors.As(err, &missing) && missing.Status == 404:
	case err != nil:
		return nil, false, err
	case held[c.Group] == want:
		return members, false, nil
	}
	if err := bao.Write(ctx, c.Path, map[string]any{"data": map[string]any{c.Group: want}}); err != nil {
		return nil, false, err
	}
	return members, true, nil
}

// members binds as the contract's reader, verifying the Service's
// certificate against the contract's CA, and reads the group.
func (c Config) members(ctx context.Context) ([]string, error) {
	ca, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s holds no PEM certificate", c.CAFile)
	}
	password, err := os.ReadFile(c.BindPasswordFile)
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(c.LDAPS)
	if err != nil {
		return nil, err
	}
	limit, err := c.lookTimeout()
	if err != nil {
		return nil, err
	}
	// The look ends with ctx (the unit stopped) or its limit, whichever
	// comes first, also while the directory holds a connection unanswered.
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var dialer net.Dialer
	raw, err := dialer.DialContext(ctx, "tcp", cmp.Or(c.Dial, c.LDAPS))
	if err != nil {
		return nil, err
	}
	defer context.AfterFunc(ctx, func() { raw.Close() })()
	tlsConn := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: host})
	if err := tlsConn.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	conn := ldap.NewConn(tlsConn, true)
	conn.Start()
	defer conn.Close()
	conn.SetTimeout(limit)
	if err := conn.Bind(c.BindDN, strings.TrimRight(string(password), "\r\n")); err != nil {
		return nil, err
	}
	dns, err := ldapgroup.Members(conn, c.BaseDN, c.Group)
	if err != nil {
		return nil, err
	}
	return ldapgroup.UIDs(dns), nil
}
