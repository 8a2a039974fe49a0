package localenv

import (
	"bufio"
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
	"github.com/fediversity/podroles/harness/kubenode"
	"github.com/fediversity/podroles/harness/ready"
	"github.com/fediversity/podroles/internal/openbao"
	"github.com/fediversity/podroles/internal/poll"
)

// PortOpenBao is the port of the OpenBao API.
const PortOpenBao = 8200

// The database engine's credentials are short-lived, so that rotation is
// quick to see: the agent renews a lease at about two thirds of its TTL,
// and finds a revoked one then. The max_ttl outlives a test run, as a
// platform's does a day. At max_ttl the agent takes a new credential and
// the service restarts. A stock kubelet forgets a container's back-off
// only after 10 minutes without a restart, so restarts every max_ttl of
// 10 minutes grew the back-off to 5 minutes, and took the Service down.
const (
	CredentialTTL    = 20 * time.Second
	credentialMaxTTL = "2h"
)

// RenderInterval is how often the pods' agents render a KV secret again
// (static_secret_render_interval): short, so that a new value is quick to
// see; the inventory says it to the suites.
const RenderInterval = 2 * time.Second

// openBao is Vault serving OpenBao's API in dev mode (OpenBao is not in
// the registries this machine reaches), configured as the platform does,
// and the agents that write its secrets into the pods.
type openBao struct {
	site     *site
	postgres *postgres
	client   *openbao.Client
	// kv are the KV v2 entries of the roles' secrets, by path.
	kv map[string]map[string]any
}

// url is the base URL of the OpenBao API.
func (o *openBao) url() string {
	return "http://" + net.JoinHostPort(o.site.openbaoAddress(), fmt.Sprint(PortOpenBao))
}

// start starts Vault in dev mode (it serves the API OpenBao keeps;
// OpenBao is not in the registries this machine reaches) and configures it
// as the platform does: KV v2 entries of the roles' secrets, the database
// engine on the environment's Postgres, and the PKI engine as the internal
// CA.
func (o *openBao) start(ctx context.Context) error {
	s := o.site
	home := filepath.Join(s.Dir, "openbao")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	// The root token goes in the environment from its file, never in argv
	// nor in a container engine's config.
	token := s.secretPath("openbao-token")
	argv := []string{s.tools.vault, "server", "-dev",
		"-dev-listen-address=" + net.JoinHostPort(s.listen(s.openbaoAddress()), fmt.Sprint(PortOpenBao)), "-dev-no-store-token"}
	if s.Cluster != nil {
		// A second listener, where the cluster's pods reach it.
		listener := fmt.Sprintf(`{"listener": [{"tcp": {"address": %q, "tls_disable": true}}]}`, net.JoinHostPort(kubenode.NodeIP, fmt.Sprint(clusterOpenBaoPort)))
		conf := filepath.Join(home, "cluster-listener.json")
		if err := writeFile(conf, []byte(listener), 0o600); err != nil {
			return err
		}
		argv = append(argv, "-config="+conf)
	}
	p, err := s.launch(ctx, "openbao", argv,
		launchOptions{dir: home, env: []string{"HOME=" + home, "VAULT_LOG_LEVEL=info"},
			secretEnv: map[string]string{"VAULT_DEV_ROOT_TOKEN_ID": token, "BAO_DEV_ROOT_TOKEN_ID": token},
			publish:   map[int]string{PortOpenBao: s.openbaoAddress()}, image: s.Images.OpenBao})
	if err != nil {
		return err
	}
	c := openbao.New(o.url(), s.secrets.openbaoRoot)
	probe := poll.Probe{Endpoint: o.url(), Expect: "the OpenBao API to be unsealed", Within: 30 * time.Second}
	if err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
		if err := ready.Alive(p, 5); err != nil {
			return err
		}
		return c.Do(ctx, http.MethodGet, "sys/health", nil, nil)
	}); err != nil {
		return err
	}
	o.client = c
	return o.configure(ctx)
}

// configure writes the roles' KV entries, the database engine on the
// environment's Postgres and the PKI engine as the internal CA, whose CA
// becomes the site's.
func (o *openBao) configure(ctx context.Context) error {
	s := o.site
	// Text, as lldap reads its JWT secret, behind a base64 field.
	jwt := []byte(randomPassword() + randomPassword())
	o.kv = map[string]map[string]any{
		// a base64 field
		"secret/data/lldap/jwt": {"value": base64.StdEncoding.EncodeToString(jwt)},
		// an environment file, of which one variable is a secret
		"secret/data/lldap/env": {"env": fmt.Sprintf("LLDAP_LDAP_BASE_DN=%s\nLLDAP_LDAP_USER_PASS=%s\nLLDAP_KEY_SEED=%s\n", baseDN, s.secrets.admin, randomPassword())},
		// a secret whose new value restarts the service
		"secret/data/lldap/key-seed": {"value": randomPassword()},
		// the reader's bind password, which the contract's file holds too
		"secret/data/lldap/authelia-bind": {"password": s.secrets.bind},
		// authelia's own secrets
		"secret/data/authelia/jwt":         {"value": randomPassword() + randomPassword()},
		"secret/data/authelia/session":     {"value": randomPassword() + randomPassword()},
		"secret/data/authelia/storage-key": {"value": randomPassword() + randomPassword()},
		// the worker's: a key with restart, a greeting without
		"secret/data/worker/api-key":  {"value": randomPassword()},
		"secret/data/worker/greeting": {"value": "hello " + randomPassword()},
	}
	if s.Faults.AutheliaStaticCredential {
		// A credential of Postgres's own, which never expires.
		o.kv["secret/data/authelia/static-db"] = map[string]any{"username": autheliaStaticUser, "password": s.secrets.pgAutheliaStatic}
	}
	keys := make([]string, 0, len(o.kv))
	for k := range o.kv {
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
		}{k, map[string]any{"data": o.kv[k]}})
	}
	// OpenBao reaches Postgres from where it runs.
	pg := o.postgres.reachable()
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
		"username":       "openbao", "password": s.secrets.pgOpenBao,
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
	add("pki/root/generate/internal", map[string]any{"common_name": "podroles internal CA (" + s.Node + ")", "ttl": "87600h", "key_type": "ec", "key_bits": 256})
	// The platform's role internal, for the namespace's domain (Known
	// Deviations: the check adds it to allowedDomains).
	add("pki/roles/internal", map[string]any{
		"allowed_domains":  []string{s.Namespace + ".svc.cluster.local", s.Namespace + ".svc", s.Namespace},
		"allow_subdomains": true, "allow_bare_domains": false, "allow_localhost": false,
		"key_type": "ec", "key_bits": 256, "max_ttl": "72h", "ttl": "24h",
	})
	// The portal's public name, for the certificate of the main pod's nginx.
	add("pki/roles/portal", map[string]any{
		"allowed_domains": []string{portalDomain}, "allow_subdomains": true,
		"key_type": "ec", "key_bits": 256, "max_ttl": "72h", "ttl": "24h",
	})
	// Last, an audit device on the server's output (its log): a test
	// counts there what a run of the suites wrote.
	add("sys/audit/stdout", map[string]any{"type": "file", "options": map[string]any{"file_path": "stdout"}})
	for _, step := range steps {
		if err := o.client.Write(ctx, step.path, step.data); err != nil {
			return err
		}
	}
	var ca struct {
		Data struct {
			Certificate string `json:"certificate"`
		} `json:"data"`
	}
	if err := o.client.Do(ctx, http.MethodGet, "pki/cert/ca", nil, &ca); err != nil {
		return err
	}
	s.caPEM = []byte(ca.Data.Certificate + "\n")
	return nil
}

// issue returns a certificate and key from the PKI engine's role for
// names.
func (o *openBao) issue(ctx context.Context, role string, names []string) (cert, key []byte, err error) {
	s, err := o.client.Read(ctx, "pki/issue/"+role, map[string]any{
		"common_name": names[0], "alt_names": strings.Join(names[1:], ","), "ttl": "24h",
	})
	if err != nil {
		return nil, nil, err
	}
	c, _ := s.Data["certificate"].(string)
	k, _ := s.Data["private_key"].(string)
	return []byte(c + "\n"), []byte(k + "\n"), nil
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
func (o *openBao) startSidecars(ctx context.Context, d *directory) error {
	for i := range replicas {
		if err := o.startSidecar(ctx, o.site.podName(i), o.site.podSecretsDir(i), d.secrets()); err != nil {
			return err
		}
	}
	return nil
}

// startSidecar starts the OpenBao agent of one pod, writing its role's
// secrets into dir, the pod's /run/secrets, and waits for every file.
func (o *openBao) startSidecar(ctx context.Context, pod, dir string, secrets map[string]facts.Secret) error {
	s := o.site
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
		"pid_file": filepath.Join(s.Dir, pod+"-agent.pid"),
		"vault":    map[string]any{"address": "http://" + net.JoinHostPort(s.reach("openbao", s.openbaoAddress()), fmt.Sprint(PortOpenBao))},
		"auto_auth": map[string]any{"method": []any{map[string]any{
			"type": "token_file", "config": map[string]any{"token_file_path": s.secretPath("openbao-token")},
		}}},
		"template_config": map[string]any{"static_secret_render_interval": RenderInterval.String()},
		"template":        templates,
	}
	data, _ := json.MarshalIndent(cfg, "", "  ")
	conf := filepath.Join(s.Dir, pod+"-agent.json")
	if err := writeFile(conf, data, 0o600); err != nil {
		return err
	}
	argv, err := s.sidecarCommand(pod, []string{s.tools.vault, "agent", "-config=" + conf})
	if err != nil {
		return err
	}
	p, err := s.launch(ctx, "sidecar-"+pod, argv, launchOptions{dir: s.Dir, env: []string{"HOME=" + filepath.Join(s.Dir, "openbao")}, image: s.Images.OpenBao})
	if err != nil {
		return err
	}
	probe := poll.Probe{Endpoint: dir, Expect: fmt.Sprintf("the sidecar of %s to write %d secrets", pod, len(files)), Within: 30 * time.Second}
	return poll.Eventually(ctx, probe, func(context.Context) error {
		if err := ready.Alive(p, 5); err != nil {
			return err
		}
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				return poll.Saw("no %s yet", f)
			}
		}
		return nil
	})
}

// changes are the requests in the server's audit log that changed a
// secret: a write or delete of a KV entry, a revocation of a lease.
func (o *openBao) changes() ([]string, error) {
	f, err := os.Open(filepath.Join(o.site.Dir, "logs", "openbao.log"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	lines := bufio.NewScanner(f)
	lines.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for lines.Scan() {
		var entry struct {
			Type    string `json:"type"`
			Request struct {
				Operation string `json:"operation"`
				Path      string `json:"path"`
			} `json:"request"`
		}
		if json.Unmarshal(lines.Bytes(), &entry) != nil || entry.Type != "request" {
			continue
		}
		op, path := entry.Request.Operation, entry.Request.Path
		kvWrite := strings.HasPrefix(path, "secret/") && (op == "create" || op == "update" || op == "delete")
		if kvWrite || strings.HasPrefix(path, "sys/leases/revoke") {
			out = append(out, op+" "+path)
		}
	}
	return out, lines.Err()
}
