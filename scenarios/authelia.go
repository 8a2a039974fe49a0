package scenarios

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// The authelia suite: a user logs in through the main pod's portal, which
// reaches the authelia role over HTTPS; authelia binds to the lldap role
// over LDAPS and stores the login in Postgres with a credential of the
// database engine (SC-005).
var autheliaSuite = &Suite{
	Name: "authelia",
	Doc:  "the admin logs in through the portal; authelia binds over LDAPS and stores the login in Postgres with a dynamic credential",
	Scenarios: []*Scenario{
		{
			Name: "portal-login",
			Spec: []string{"SC-005"},
			Doc:  "the role's Service serves a certificate that the node's fediversity.authelia.caFile verifies for fediversity.authelia.host, as the portal's nginx checks it; the admin logs in through the portal (first factor) and gets a session cookie",
			Skip: needsPortal,
			Uses: []Capability{capExec},
			Steps: Checks(
				Check{Name: "the role's certificate verifies with the node's CA", Do: autheliaVerifies},
				Check{Name: "log in through the portal", Do: func(ctx context.Context, s *State) error {
					_, err := portalLogin(ctx, s, true)
					return err
				}},
			),
		},
		{
			Name: "wrong-password-refused",
			Spec: []string{"SC-005"},
			Doc:  "a wrong password of the admin is refused at the portal, which logs the right one in before and after it: a login between failures keeps Authelia's regulation from banning the admin at the next run",
			Skip: needsPortal,
			Uses: usesNothing,
			Steps: Checks(
				// Without this, a portal that refuses everyone (its
				// directory down) would pass.
				Check{Name: "log in with the right password", Do: func(ctx context.Context, s *State) error {
					_, err := portalLogin(ctx, s, true)
					return err
				}},
				Check{Name: "log in with a wrong password", Do: func(ctx context.Context, s *State) error {
					_, err := portalLogin(ctx, s, false)
					return err
				}},
				// Authelia bans a user after a few failures in a row (3
				// in 2 minutes by default); a login between them resets
				// the count, so runs in a row lock no one out.
				Check{Name: "log in with the right password again", Do: func(ctx context.Context, s *State) error {
					_, err := portalLogin(ctx, s, true)
					return err
				}},
			),
		},
		{
			Name: "login-stored-in-postgres",
			Spec: []string{"SC-005"},
			Doc:  "the login is in authelia's Postgres, which authelia reaches with a credential that expires: the database engine's",
			Skip: func(w world.World) string {
				inv := w.Inventory()
				if why := needsPortal(w); why != "" {
					return why
				}
				if inv.Portal.StorageDSNFile == "" {
					return "the inventory's portal has no storageDSNFile"
				}
				return ""
			},
			Uses: usesNothing,
			Steps: Sequence(
				Step[portalLoginAt]{Name: "log in through the portal", Do: func(ctx context.Context, s *State, v *portalLoginAt) error {
					var err error
					v.at, err = portalLogin(ctx, s, true)
					return err
				}},
				Step[portalLoginAt]{Name: "the login and the dynamic credential are in Postgres", Do: func(ctx context.Context, s *State, v *portalLoginAt) error {
					return loginStored(ctx, s, v.at)
				}},
			),
		},
	},
}

// portalLoginAt is when login-stored-in-postgres's login was sent.
type portalLoginAt struct{ at time.Time }

// needsPortal says why no login through the portal can be judged: no
// portal, no admin to log in with, or no role of the node that runs
// authelia (the portal's upstream is then not the node's).
func needsPortal(w world.World) string {
	inv := w.Inventory()
	if inv.Portal == nil {
		return "the inventory has no portal"
	}
	if inv.Authelia == nil {
		return fmt.Sprintf("node %s has no role that runs authelia: the portal's upstream is not the node's to judge", inv.Node)
	}
	if inv.LDAP == nil || inv.LDAP.AdminUser == "" || inv.LDAP.AdminPasswordFile == "" {
		return "the inventory's ldap has no adminUser and adminPasswordFile to log in with"
	}
	return ""
}

// portalClient connects to the portal's URL, at its address if given,
// verifying its certificate for the URL's host.
func portalClient(p *inventory.Portal) (*http.Client, *url.URL, error) {
	u, err := url.Parse(p.URL)
	if err != nil || u.Host == "" {
		return nil, nil, poll.Permanent(fmt.Errorf("portal url %q is no URL", p.URL))
	}
	cfg := &tls.Config{ServerName: u.Hostname()}
	if p.CAFile != "" {
		pool, err := caPool(p.CAFile)
		if err != nil {
			return nil, nil, err
		}
		cfg.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	transport := &http.Transport{Proxy: nil, TLSClientConfig: cfg, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p.Address != "" {
			addr = p.Address
		}
		return dialer.DialContext(ctx, network, addr)
	}}
	return &http.Client{Timeout: 15 * time.Second, Transport: transport}, u, nil
}

// WrongPassword is the password that wrong-password-refused tries for
// user: one that no one sets.
func WrongPassword(user string) string { return "not-the-password-of-" + user + "-podroles" }

// portalLogin posts the admin's first factor to the portal, with the
// right password or a wrong one, and checks the answer; it returns when
// the login was sent.
func portalLogin(ctx context.Context, s *State, rightPassword bool) (time.Time, error) {
	client, u, err := portalClient(s.Inv.Portal)
	if err != nil {
		return time.Time{}, err
	}
	defer client.CloseIdleConnections()
	user := s.Inv.LDAP.AdminUser
	expect := "a login of " + user + " with a session cookie"
	var password string
	if rightPassword {
		if password, err = inventory.ReadSecret(s.Inv.LDAP.AdminPasswordFile); err != nil {
			return time.Time{}, poll.Permanent(err)
		}
	} else {
		password = WrongPassword(user)
		expect = "a wrong password of " + user + " to be refused with HTTP 401"
	}
	body, _ := json.Marshal(map[string]any{"username": user, "password": password, "keepMeLoggedIn": false})
	endpoint := u.JoinPath("/api/firstfactor").String()
	var sent time.Time
	err = poll.Eventually(ctx, poll.Probe{Endpoint: endpoint, Expect: expect, Within: s.Patience}, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		sent = time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var out struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		json.Unmarshal(data, &out)
		if !rightPassword {
			if resp.StatusCode == http.StatusUnauthorized && out.Status == "KO" {
				s.Note("a wrong password of %s refused as it must be: HTTP 401, %s", user, out.Message)
				return nil
			}
			return poll.Saw("HTTP %d %s", resp.StatusCode, out.Status)
		}
		if resp.StatusCode != http.StatusOK || out.Status != "OK" {
			return poll.Saw("HTTP %d %s %s%s", resp.StatusCode, out.Status, out.Message, hintBadGateway(resp.StatusCode))
		}
		for _, c := range resp.Cookies() {
			if c.Name == "authelia_session" && c.Value != "" {
				s.Note("%s logged in through %s; session cookie for %s", s.Inv.LDAP.AdminUser, u.Host, c.Domain)
				return nil
			}
		}
		return poll.Saw("HTTP 200 without a session cookie")
	})
	return sent, err
}

// autheliaVerifies checks what the main pod's nginx relies on (Known
// Deviations): the authelia role's Service answers TLS with a certificate
// that the node's fediversity.authelia.caFile verifies for
// fediversity.authelia.host.
func autheliaVerifies(ctx context.Context, s *State) error {
	a := s.Inv.Authelia
	if a.CAFile == "" {
		return poll.Permanent(fmt.Errorf("the node's fediversity.authelia.caFile is null: nothing to verify the role %s with", a.Role))
	}
	r := s.Inv.Roles[a.Role]
	if r == nil || r.Service == nil {
		return poll.Permanent(fmt.Errorf("the inventory has no Service of the authelia role %s", a.Role))
	}
	port := 0
	if role, ok := s.Inv.Facts.PodRoles.Roles[a.Role]; ok && len(role.Ports) > 0 {
		port = role.Ports[0].Port
	}
	addr, err := world.Addr(*r.Service, port)
	if err != nil {
		return err
	}
	pool, err := nodeCA(ctx, s, a.CAFile, "fediversity.authelia.caFile")
	if err != nil {
		return err
	}
	probe := poll.Probe{Endpoint: fmt.Sprintf("https://%s (%s, TLS name %s)", addr, r.Service.Name, a.Host), Expect: "a certificate that the node's fediversity.authelia.caFile verifies for fediversity.authelia.host", Within: s.Patience}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{RootCAs: pool, ServerName: a.Host}}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		conn.Close()
		s.Note("%s serves a certificate for %s that %s verifies", r.Service.Name, a.Host, a.CAFile)
		return nil
	})
}

func hintBadGateway(status int) string {
	if status == http.StatusBadGateway {
		return ": the portal could not reach authelia (is its certificate verified against the right CA?)"
	}
	return ""
}

// loginStored finds the login in authelia's authentication log, and checks
// that authelia's connections use a credential that expires.
func loginStored(ctx context.Context, s *State, loginAt time.Time) error {
	u, raw, err := readDSN(s.Inv.Portal.StorageDSNFile)
	if err != nil {
		return err
	}
	expect := "a successful login of " + s.Inv.LDAP.AdminUser + " in authentication_logs, and authelia connected with an expiring credential"
	return poll.Eventually(ctx, poll.Probe{Endpoint: u.Redacted(), Expect: expect, Within: s.Patience}, func(ctx context.Context) error {
		db, err := pgx.Connect(ctx, raw)
		if err != nil {
			return err
		}
		defer db.Close(context.WithoutCancel(ctx))
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM authentication_logs WHERE username = $1 AND successful AND time >= $2`,
			s.Inv.LDAP.AdminUser, loginAt.Add(-2*time.Second)).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return poll.Saw("no successful login of %s since %s", s.Inv.LDAP.AdminUser, loginAt.Format(time.TimeOnly))
		}
		// A role valid until 'infinity' never expires, as one with no
		// date does not: neither is one of the database engine.
		rows, err := db.Query(ctx, `SELECT a.usename, r.rolvaliduntil IS NOT NULL AND r.rolvaliduntil <> 'infinity' FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename
			WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()`)
		if err != nil {
			return err
		}
		users, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
			name    string
			expires bool
		}, error) {
			var u struct {
				name    string
				expires bool
			}
			err := r.Scan(&u.name, &u.expires)
			return u, err
		})
		if err != nil {
			return err
		}
		for _, user := range users {
			if !user.expires {
				return poll.Saw("authelia connected as %s, a credential that does not expire: not one of the database engine", user.name)
			}
		}
		if len(users) == 0 {
			return poll.Saw("no connection of authelia to its database")
		}
		s.Note("%d logins of %s stored; authelia connects as %s, a credential that expires", n, s.Inv.LDAP.AdminUser, users[0].name)
		return nil
	})
}
