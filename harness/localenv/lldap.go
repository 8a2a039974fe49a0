package localenv

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fediversity/podroles/harness/ready"
	"github.com/fediversity/podroles/internal/lldap"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
)

// The lldap role served by lldap's official image, where the containers
// provider has one (a laptop's registry). UNTRIED HERE: this project's
// machines reach no registry and cannot build lldap (a Rust program whose
// crates are out of reach), so CI serves the role with slapd and this
// path has never run. What it is built from is tested on slapd: the
// supervisor's environment files that give lldap its rotated database
// URL, the password modify operation that sets the reader's password,
// and the key conversion. It follows lldap's documented configuration
// (LLDAP_ variables, _FILE for secrets) and GraphQL schema.

// PortLLDAPHTTP is lldap's HTTP port: its login and GraphQL API.
const PortLLDAPHTTP = 17170

// lldapBinary is lldap in its official image.
const lldapBinary = "/app/lldap"

// servesLLDAP says lldap's image serves the lldap role.
func (s *site) servesLLDAP() bool {
	return s.Provider == ProviderContainers && s.Images.LLDAP != ""
}

// directoryPod is the name of the server of the role's pod i.
func (s *site) directoryPod(i int) string {
	if s.servesLLDAP() {
		return fmt.Sprintf("lldap-%d", i)
	}
	return fmt.Sprintf("slapd-%d", i)
}

// standIn is what stands in for lldap in its role, as the inventory says:
// nothing where lldap runs.
func (d *directory) standIn() string {
	if d.site.servesLLDAP() {
		return ""
	}
	return inventory.StandInSlapd
}

// lldapEnv is the configuration of the lldap of pod i, all in variables.
// The secrets come from the files the pod's sidecar writes; the database
// URL comes from db.env through the supervisor, read anew at each start.
// The server's key is a file both replicas share: a changed key seed
// would make lldap refuse to start, and the rotation suite changes
// key-seed only to see the pods restart. LDAPS uses the Service's
// certificate. lldap reads any LLDAP_X_FILE as X from that file, but
// key_file and cert_file, which are paths.
func (d *directory) lldapEnv(i int, dir string) []string {
	s := d.site
	secrets := s.podSecretsDir(i)
	return []string{
		"LLDAP_LDAP_BASE_DN=" + baseDN,
		"LLDAP_LDAP_USER_DN=admin",
		"LLDAP_LDAP_USER_EMAIL=admin@example.com",
		"LLDAP_LDAP_USER_PASS_FILE=" + filepath.Join(secrets, "admin-password"),
		"LLDAP_JWT_SECRET_FILE=" + filepath.Join(secrets, "jwt"),
		"LLDAP_KEY_FILE=" + filepath.Join(dir, "server_key"),
		"LLDAP_LDAP_HOST=0.0.0.0", fmt.Sprintf("LLDAP_LDAP_PORT=%d", PortLDAP),
		"LLDAP_HTTP_HOST=0.0.0.0", fmt.Sprintf("LLDAP_HTTP_PORT=%d", PortLLDAPHTTP),
		fmt.Sprintf("LLDAP_HTTP_URL=http://%s:%d", s.serviceName(), PortLLDAPHTTP),
		"LLDAP_LDAPS_OPTIONS__ENABLED=true", fmt.Sprintf("LLDAP_LDAPS_OPTIONS__PORT=%d", PortLDAPS),
		"LLDAP_LDAPS_OPTIONS__CERT_FILE=" + filepath.Join(s.Dir, "tls", "server.pem"),
		"LLDAP_LDAPS_OPTIONS__KEY_FILE=" + filepath.Join(dir, "server.key"),
	}
}

// lldapEnvFiles are the secrets the supervisor gives lldap as variables.
// (lldap reads its JWT secret, a secret without restart, only at start:
// after the rotation suite writes a new one, replicas that restart at
// different moments disagree on tokens for a while. The runner runs the
// rotation suite after lldap-http.)
var lldapEnvFiles = []string{"db.env"}

// startLLDAP starts the role's replicas from lldap's image, one after the
// other (the first makes the schema in the shared database), and
// provisions the reader.
func (d *directory) startLLDAP(ctx context.Context, ob *openBao) error {
	s := d.site
	if ob == nil {
		return errors.New("lldap's image needs OpenBao for its secrets: give the environment Vault or OpenBao's image, or --image lldap= for slapd")
	}
	dir := filepath.Join(s.Dir, "lldap")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	key, err := os.ReadFile(filepath.Join(s.Dir, "tls", "server.key"))
	if err != nil {
		return err
	}
	if key, err = pkcs8PEM(key); err != nil {
		return fmt.Errorf("the Service's key: %w", err)
	}
	if err := writeFile(filepath.Join(dir, "server.key"), key, 0o600); err != nil {
		return err
	}
	for i := range replicas {
		argv, err := s.podCommand(s.podName(i), "lldap", s.podSecretsDir(i), d.secrets(), lldapEnvFiles, []string{lldapBinary, "run"})
		if err != nil {
			return err
		}
		at := s.podAddress(i)
		p, err := s.launch(ctx, s.directoryPod(i), argv, launchOptions{
			// lldap serves its web pages from ./app, relative to /app.
			dir: "/app", env: d.lldapEnv(i, dir), image: s.Images.LLDAP,
			publish: publishOn(d.podPorts(), at),
		})
		if err != nil {
			return err
		}
		if err := ready.TLS(ctx, p, net.JoinHostPort(at, fmt.Sprint(PortLDAPS))); err != nil {
			return err
		}
	}
	return d.provisionLLDAP(ctx)
}

// provisionLLDAP does the companion's work for the suites: the reader
// authelia-bind, in lldap_strict_readonly, with its password. Users and
// groups go through lldap's GraphQL API, the password through LDAP: lldap
// takes it no other way but its own OPAQUE exchange.
func (d *directory) provisionLLDAP(ctx context.Context) error {
	api := lldap.New(fmt.Sprintf("http://%s", net.JoinHostPort(d.site.podAddress(0), fmt.Sprint(PortLLDAPHTTP))))
	var token string
	probe := poll.Probe{Endpoint: api.Addr + "/auth/simple/login", Expect: "a login of lldap's admin", Within: 30 * time.Second}
	err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
		var err error
		token, err = api.Login(ctx, "admin", d.site.secrets.admin)
		return err
	})
	if err != nil {
		return err
	}
	const reader, group = "authelia-bind", "lldap_strict_readonly"
	if err := api.GraphQL(ctx, token, `mutation($user: CreateUserInput!) { createUser(user: $user) { id } }`,
		map[string]any{"user": map[string]any{"id": reader, "email": reader + "@example.com", "displayName": reader}}, nil); err != nil {
		return fmt.Errorf("create %s: %w", reader, err)
	}
	var groups struct {
		Groups []lldapGroup `json:"groups"`
	}
	if err := api.GraphQL(ctx, token, `{ groups { id displayName } }`, nil, &groups); err != nil {
		return fmt.Errorf("list the groups: %w", err)
	}
	i := slices.IndexFunc(groups.Groups, func(g lldapGroup) bool { return g.DisplayName == group })
	if i < 0 {
		return fmt.Errorf("lldap has no group %s", group)
	}
	if err := api.GraphQL(ctx, token, `mutation($user: String!, $group: Int!) { addUserToGroup(userId: $user, groupId: $group) { ok } }`,
		map[string]any{"user": reader, "group": groups.Groups[i].ID}, nil); err != nil {
		return fmt.Errorf("add %s to %s: %w", reader, group, err)
	}
	return d.changePassword(ctx, reader, d.site.secrets.bind)
}

// lldapGroup is a group as lldap's GraphQL API lists it.
type lldapGroup struct {
	ID          int    `json:"id"`
	DisplayName string `json:"displayName"`
}

// pkcs8PEM rewrites a private key (PKCS#8, SEC 1 or PKCS#1 PEM, as PKI
// engines give them) as PKCS#8, which every TLS library reads.
func pkcs8PEM(keyPEM []byte) ([]byte, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("a PEM block of %s, not a private key", block.Type)
	}
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
