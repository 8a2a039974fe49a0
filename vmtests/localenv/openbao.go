package vmtests

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/openbao"
	"github.com/fediversity/podroles/internal/poll"
)

// PortOpenBao is the port of the OpenBao API.
const PortOpenBao = 8200

// The database engine's credentials are short-lived, so that rotation is
// quick to see: the agent renews a lease at about two thirds of its TTL,
// and finds a revoked one then.
const (
	CredentialTTL    = 20 * time.Second
	credentialMaxTTL = "10m"
)

func (e *Env) openbaoAddress() string { return e.Loopback + ".30" }

// OpenBaoURL is the base URL of the OpenBao API, or "" without one.
func (e *Env) OpenBaoURL() string {
	if e.tools.vault == "" {
		return ""
	}
	return "http://" + net.JoinHostPort(e.openbaoAddress(), fmt.Sprint(PortOpenBao))
}

// startOpenBao starts Vault in dev mode (it serves the API OpenBao keeps;
// OpenBao is not in the registries this machine reaches) and configures it
// as the platform does: KV v2 entries of the roles' secrets, the database
// engine on the environment's Postgres, and the PKI engine as the internal
// CA.
func (e *Env) startOpenBao(ctx context.Context) error {
	home := filepath.Join(e.Dir, "openbao")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	// The root token goes in the environment from its file, never in argv
	// nor in a container engine's config.
	token := e.secretPath("openbao-token")
	p, err := e.launch(ctx, "openbao", []string{e.tools.vault, "server", "-dev",
		"-dev-listen-address=" + net.JoinHostPort(e.listen(e.openbaoAddress()), fmt.Sprint(PortOpenBao)), "-dev-no-store-token"},
		startOptions{dir: home, detached: e.Detached, env: []string{"HOME=" + home, "VAULT_LOG_LEVEL=info"},
			secretEnv: map[string]string{"VAULT_DEV_ROOT_TOKEN_ID": token, "BAO_DEV_ROOT_TOKEN_ID": token},
			publish:   map[int]string{PortOpenBao: e.openbaoAddress()}, image: e.Images.OpenBao})
	if err != nil {
		return err
	}
	c := openbao.New(e.OpenBaoURL(), e.secrets.openbaoRoot)
	probe := poll.Probe{Endpoint: e.OpenBaoURL(), Expect: "the OpenBao API to be unsealed", Within: 30 * time.Second}
	if err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
		if !p.running() {
			return poll.Permanent(fmt.Errorf("openbao exited: %s", p.lastLines(5)))
		}
		return c.Do(ctx, http.MethodGet, "sys/health", nil, nil)
	}); err != nil {
		return err
	}
	e.openbao = c
	return e.configureOpenBao(ctx)
}

func (e *Env) configureOpenBao(ctx context.Context) error {
	// Text, as lldap reads its JWT secret, behind a base64 field.
	jwt := []byte(randomPassword() + randomPassword())
	e.kv = map[string]map[string]any{
		// a base64 field
		"secret/data/lldap/jwt": {"value": base64.StdEncoding.EncodeToString(jwt)},
		// an environment file, of which one variable is a secret
		"secret/data/lldap/env": {"env": fmt.Sprintf("LLDAP_LDAP_BASE_DN=%s\nLLDAP_LDAP_USER_PASS=%s\nLLDAP_KEY_SEED=%s\n", baseDN, e.secrets.admin, randomPassword())},
		// a secret whose new value restarts the service
		"secret/data/lldap/key-seed": {"value": randomPassword()},
		// the reader's bind password, which the contract's file holds too
		"secret/data/lldap/authelia-bind": {"password": e.secrets.bind},
		// authelia's own secrets
		"secret/data/authelia/jwt":         {"value": randomPassword() + randomPassword()},
		"secret/data/authelia/session":     {"value": randomPassword() + randomPassword()},
		"secret/data/authelia/storage-key": {"value": randomPassword() + randomPassword()},
	}
	keys := make([]string, 0, len(e.kv))
	for k := range e.kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	steps := []struct {
		path string
		data any
	}{}
	for _, k := range keys {
		steps = append(steps, struct {
			path string
			data any
		}{k, map[string]any{"data": e.kv[k]}})
	}
	// OpenBao reaches Postgres from where it runs.
	pg := net.JoinHostPort(e.reach("postgres", e.postgresAddress()), fmt.Sprint(e.pgPort))
	add := func(path string, data any) {
		steps = append(steps, struct {
			path string
			data any
		}{path, data})
	}
	add("sys/mounts/database", map[string]any{"type": "database"})
	add("database/config/postgres", map[string]any{
		"plugin_name":    "postgresql-database-plugin",
		"connection_url": "postgresql://{{username}}:{{password}}@" + pg + "/postgres?sslmode=disable",
		"username":       "openbao", "password": e.secrets.pgOpenBao,
		"allowed_roles": []string{"lldap", "authelia"},
	})
	for _, role := range []string{"lldap", "authelia"} {
		add("database/roles/"+role, map[string]any{
			"db_name": "postgres",
			// Members of the role that owns the database, acting as it, so
			// that what one credential makes the next one can use.
			"creation_statements": []string{
				fmt.Sprintf(`CREATE ROLE "{{name}}" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}' IN ROLE %s`, role),
				fmt.Sprintf(`ALTER ROLE "{{name}}" SET role = '%s'`, role),
			},
			"default_ttl": CredentialTTL.String(), "max_ttl": credentialMaxTTL,
		})
	}
	add("sys/mounts/pki", map[string]any{"type": "pki", "config": map[string]any{"max_lease_ttl": "87600h"}})
	add("pki/root/generate/internal", map[string]any{"common_name": "podroles internal CA (" + e.Node + ")", "ttl": "87600h", "key_type": "ec", "key_bits": 256})
	// The platform's role internal, for the namespace's domain (Known
	// Deviations: the check adds it to allowedDomains).
	add("pki/roles/internal", map[string]any{
		"allowed_domains":  []string{e.Namespace + ".svc.cluster.local", e.Namespace + ".svc", e.Namespace},
		"allow_subdomains": true, "allow_bare_domains": false, "allow_localhost": false,
		"key_type": "ec", "key_bits": 256, "max_ttl": "72h", "ttl": "24h",
	})
	// The portal's public name, for the certificate of the main pod's nginx.
	add("pki/roles/portal", map[string]any{
		"allowed_domains": []string{portalDomain}, "allow_subdomains": true,
		"key_type": "ec", "key_bits": 256, "max_ttl": "72h", "ttl": "24h",
	})
	for _, s := range steps {
		if err := e.openbao.Write(ctx, s.path, s.data); err != nil {
			return err
		}
	}
	var ca struct {
		Data struct {
			Certificate string `json:"certificate"`
		} `json:"data"`
	}
	if err := e.openbao.Do(ctx, http.MethodGet, "pki/cert/ca", nil, &ca); err != nil {
		return err
	}
	e.caPEM = []byte(ca.Data.Certificate + "\n")
	return nil
}

// issue returns a certificate and key from the PKI engine's role for
// names.
func (e *Env) issue(ctx context.Context, role string, names []string) (cert, key []byte, err error) {
	s, err := e.openbao.Read(ctx, "pki/issue/"+role, map[string]any{
		"common_name": names[0], "alt_names": strings.Join(names[1:], ","), "ttl": "24h",
	})
	if err != nil {
		return nil, nil, err
	}
	c, _ := s.Data["certificate"].(string)
	k, _ := s.Data["private_key"].(string)
	return []byte(c + "\n"), []byte(k + "\n"), nil
}

// lldapSecrets are the secrets of the lldap role, as the node defines them
// in fediversity.podRoles.roles.lldap.secrets: one of each kind the spec
// has.
func (e *Env) lldapSecrets() map[string]facts.Secret {
	str := func(s string) *string { return &s }
	return map[string]facts.Secret{
		"jwt":            {Path: "secret/data/lldap/jwt", Field: str("value"), Encoding: str("base64")},
		"admin-password": {Path: "secret/data/lldap/env", Field: str("env"), Variable: str("LLDAP_LDAP_USER_PASS")},
		"key-seed":       {Path: "secret/data/lldap/key-seed", Field: str("value"), Restart: true},
		"db.env": {Path: "database/creds/lldap", Restart: true,
			Template: str(fmt.Sprintf("LLDAP_DATABASE_URL=postgres://{{ .Data.username }}:{{ .Data.password }}@%s/lldap", net.JoinHostPort(e.reach("postgres", e.postgresAddress()), fmt.Sprint(e.pgPort))))},
		"tls.pem": {Path: "pki/issue/internal", Restart: true,
			Template:   str("{{ .Data.certificate }}\n{{ .Data.private_key }}"),
			Parameters: map[string]any{"common_name": e.ServiceName(), "ttl": "1h"}},
	}
}

// agentTemplate writes a secret as a template of the OpenBao agent: the
// field, decoded, one variable of it, or the node's template over the
// response, with the parameters sent along. No line end is added.
func agentTemplate(s facts.Secret) (string, error) {
	args := fmt.Sprintf("%q", s.Path)
	keys := make([]string, 0, len(s.Parameters))
	for k := range s.Parameters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args += fmt.Sprintf(" %q", fmt.Sprintf("%s=%v", k, s.Parameters[k]))
	}
	var body string
	switch {
	case s.Template != nil:
		body = *s.Template
	case s.Field != nil:
		body = fmt.Sprintf("index .Data.data %q", *s.Field)
		if s.Encoding != nil && *s.Encoding == "base64" {
			body += " | base64Decode"
		}
		if s.Variable != nil {
			// The variable's value, alone on its line of the environment file.
			body = fmt.Sprintf(`%s | regexReplaceAll "(?s)^(?:.*\n)?%s=([^\n]*)(?:\n.*)?$" "$1"`, body, *s.Variable)
		}
		body = "{{ " + body + " }}"
	default:
		return "", fmt.Errorf("secret at %s has neither a field nor a template", s.Path)
	}
	return "{{ with secret " + args + " }}" + body + "{{ end }}", nil
}

// startSidecars starts an OpenBao agent for each pod of the lldap role.
func (e *Env) startSidecars(ctx context.Context) error {
	for i := range replicas {
		if err := e.startSidecar(ctx, e.podName(i), e.podSecretsDir(i), e.lldapSecrets()); err != nil {
			return err
		}
	}
	return nil
}

// startSidecar starts the OpenBao agent of one pod, writing its role's
// secrets into dir, the pod's /run/secrets, and waits for every file.
func (e *Env) startSidecar(ctx context.Context, pod, dir string, secrets map[string]facts.Secret) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var templates []map[string]any
	files := make([]string, 0, len(secrets))
	for file := range secrets {
		files = append(files, file)
	}
	sort.Strings(files)
	for _, file := range files {
		tmpl, err := agentTemplate(secrets[file])
		if err != nil {
			return err
		}
		templates = append(templates, map[string]any{"contents": tmpl, "destination": filepath.Join(dir, file), "perms": "0600", "error_on_missing_key": true})
	}
	cfg := map[string]any{
		"pid_file": filepath.Join(e.Dir, pod+"-agent.pid"),
		"vault":    map[string]any{"address": "http://" + net.JoinHostPort(e.reach("openbao", e.openbaoAddress()), fmt.Sprint(PortOpenBao))},
		"auto_auth": map[string]any{"method": []any{map[string]any{
			"type": "token_file", "config": map[string]any{"token_file_path": e.secretPath("openbao-token")},
		}}},
		"template_config": map[string]any{"static_secret_render_interval": "2s"},
		"template":        templates,
	}
	data, _ := json.MarshalIndent(cfg, "", "  ")
	conf := filepath.Join(e.Dir, pod+"-agent.json")
	if err := writeFile(conf, data, 0o600); err != nil {
		return err
	}
	p, err := e.launch(ctx, "sidecar-"+pod, []string{e.tools.vault, "agent", "-config=" + conf}, startOptions{dir: e.Dir, detached: e.Detached, env: []string{"HOME=" + filepath.Join(e.Dir, "openbao")}, image: e.Images.OpenBao})
	if err != nil {
		return err
	}
	probe := poll.Probe{Endpoint: dir, Expect: fmt.Sprintf("the sidecar of %s to write %d secrets", pod, len(files)), Within: 30 * time.Second}
	return poll.Eventually(ctx, probe, func(context.Context) error {
		if !p.running() {
			return poll.Permanent(fmt.Errorf("the sidecar exited: %s", p.lastLines(5)))
		}
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				return poll.Saw("no %s yet", f)
			}
		}
		return nil
	})
}

func (e *Env) podName(i int) string { return fmt.Sprintf("%s-lldap-%d", e.Node, i) }
func (e *Env) podSecretsDir(i int) string {
	return filepath.Join(e.Dir, "pods", e.podName(i), "run", "secrets")
}
