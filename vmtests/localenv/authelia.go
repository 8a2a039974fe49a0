package vmtests

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/fediversity/podroles/facts"
)

// Ports and names of the authelia role and the main pod's portal.
const (
	PortAuthelia = 9091
	PortPortal   = 8443
	portalDomain = "example.com"
	portalHost   = "auth." + portalDomain
)

func (e *Env) autheliaPodAddress() string     { return e.Loopback + ".40" }
func (e *Env) autheliaServiceAddress() string { return e.Loopback + ".11" }
func (e *Env) portalAddress() string          { return e.Loopback + ".50" }
func (e *Env) autheliaPodName() string        { return e.Node + "-authelia-0" }
func (e *Env) autheliaSecretsDir() string {
	return filepath.Join(e.Dir, "pods", e.autheliaPodName(), "run", "secrets")
}

func (e *Env) autheliaServiceName() string {
	return fmt.Sprintf("%s-authelia.%s.svc.cluster.local", e.Node, e.Namespace)
}

// autheliaSecrets are the authelia role's secrets, as its node module
// gives them: its own keys from KV, the reader's bind password, a
// credential of the database engine and a certificate of the PKI engine
// for its Service (Known Deviations: it serves HTTPS from tls.pem).
func (e *Env) autheliaSecrets() map[string]facts.Secret {
	str := func(s string) *string { return &s }
	return map[string]facts.Secret{
		"jwt":           {Path: "secret/data/authelia/jwt", Field: str("value")},
		"session":       {Path: "secret/data/authelia/session", Field: str("value")},
		"storage-key":   {Path: "secret/data/authelia/storage-key", Field: str("value")},
		"bind-password": {Path: "secret/data/lldap/authelia-bind", Field: str("password")},
		// Two files of one credential: the agent reads the engine once for
		// both.
		"db-username": {Path: "database/creds/authelia", Template: str("{{ .Data.username }}"), Restart: true},
		"db-password": {Path: "database/creds/authelia", Template: str("{{ .Data.password }}"), Restart: true},
		"tls.pem": {Path: "pki/issue/internal", Restart: true,
			Template:   str("{{ .Data.certificate }}\n{{ .Data.private_key }}"),
			Parameters: map[string]any{"common_name": e.autheliaServiceName(), "ttl": "24h"}},
	}
}

// autheliaConfig is authelia's configuration: its LDAP backend the lldap
// role's Service over LDAPS, verified against the PKI's CA, its storage
// the Postgres out of the pod with the dynamic credential, HTTPS from its
// pod's tls.pem. Secrets come from files, through the template filter and
// the _FILE variables.
func (e *Env) autheliaConfig() string {
	secrets := e.autheliaSecretsDir()
	return fmt.Sprintf(`# authelia of the local environment; see vmtests/authelia.go
certificates_directory: '%[1]s'
server:
  address: 'tcp://%[2]s/'
  tls:
    certificate: '%[3]s/tls.pem'
    key: '%[3]s/tls.pem'
log:
  level: 'info'
ntp:
  disable_startup_check: true
identity_validation:
  reset_password:
    jwt_secret: '{{ secret "%[3]s/jwt" }}'
authentication_backend:
  password_reset:
    disable: true
  ldap:
    address: 'ldaps://%[4]s'
    implementation: 'custom'
    timeout: '5s'
    tls:
      server_name: '%[5]s'
      skip_verify: false
      minimum_version: 'TLS1.2'
    base_dn: '%[6]s'
    additional_users_dn: 'ou=people'
    users_filter: '(&({username_attribute}={input})(objectClass=inetOrgPerson))'
    additional_groups_dn: 'ou=groups'
    groups_filter: '(&(uniqueMember={dn})(objectClass=groupOfUniqueNames))'
    user: 'uid=authelia-bind,ou=people,%[6]s'
    password: '{{ secret "%[3]s/bind-password" }}'
    attributes:
      username: 'uid'
      display_name: 'cn'
      mail: 'mail'
      group_name: 'cn'
access_control:
  default_policy: 'one_factor'
session:
  secret: '{{ secret "%[3]s/session" }}'
  cookies:
    - domain: '%[7]s'
      authelia_url: 'https://%[8]s'
storage:
  encryption_key: '{{ secret "%[3]s/storage-key" }}'
  postgres:
    address: 'tcp://%[9]s'
    database: 'authelia'
    username: '{{ secret "%[3]s/db-username" }}'
    password: '{{ secret "%[3]s/db-password" }}'
notifier:
  disable_startup_check: true
  filesystem:
    filename: '%[10]s/notifications.txt'
`, filepath.Join(e.Dir, "tls", "trusted"), net.JoinHostPort(e.listen(e.autheliaPodAddress()), fmt.Sprint(PortAuthelia)), secrets,
		net.JoinHostPort(e.reach("haproxy", e.serviceAddress()), fmt.Sprint(PortLDAPS)), e.ServiceName(), baseDN, portalDomain, portalHost,
		net.JoinHostPort(e.reach("postgres", e.postgresAddress()), strconv.Itoa(e.pgPort)), filepath.Join(e.Dir, "authelia"))
}

// startAuthelia starts the authelia role's pod: its sidecar, then authelia.
func (e *Env) startAuthelia(ctx context.Context) error {
	if err := e.startSidecar(ctx, e.autheliaPodName(), e.autheliaSecretsDir(), e.autheliaSecrets()); err != nil {
		return err
	}
	dir := filepath.Join(e.Dir, "authelia")
	trusted := filepath.Join(e.Dir, "tls", "trusted")
	for _, d := range []string{dir, trusted} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := writeFile(filepath.Join(trusted, "openbao-ca.crt"), e.caPEM, 0o644); err != nil {
		return err
	}
	conf := filepath.Join(dir, "configuration.yml")
	if err := writeFile(conf, []byte(e.autheliaConfig()), 0o600); err != nil {
		return err
	}
	argv, err := e.podCommand(e.autheliaPodName(), e.autheliaSecretsDir(), e.autheliaSecrets(), nil, []string{e.tools.authelia, "--config", conf})
	if err != nil {
		return err
	}
	p, err := e.launch(ctx, "authelia", argv, startOptions{
		dir: dir, detached: e.Detached, env: []string{"X_AUTHELIA_CONFIG_FILTERS=template"},
		publish: map[int]string{PortAuthelia: e.autheliaPodAddress()}, image: e.Images.Authelia,
	})
	if err != nil {
		return err
	}
	return e.waitHTTPS(ctx, p, "https://"+net.JoinHostPort(e.autheliaPodAddress(), fmt.Sprint(PortAuthelia))+"/api/health", e.autheliaServiceName())
}

// waitHTTPS waits until url answers 200 over HTTPS verified against the
// environment's CA for serverName.
func (e *Env) waitHTTPS(ctx context.Context, p server, rawURL, serverName string) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.caPEM)
	return waitHTTP(ctx, p, rawURL, &tls.Config{RootCAs: pool, ServerName: serverName})
}

// nginxConfig is the main pod's portal: HTTPS for the portal's name, and a
// proxy to the authelia role's Service over HTTPS that verifies its
// certificate against the PKI's CA.
func (e *Env) nginxConfig(dir string) string {
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	return fmt.Sprintf(`# the portal of the main pod; see vmtests/authelia.go
%[1]s
daemon off;
# One process, so that nothing of nginx outlives the PID the environment
# stops.
master_process off;
pid %[2]s/nginx.pid;
error_log %[3]s/nginx-error.log info;
events { worker_connections 64; }
http {
  access_log %[3]s/nginx-access.log;
  client_body_temp_path %[2]s/tmp/body;
  proxy_temp_path %[2]s/tmp/proxy;
  fastcgi_temp_path %[2]s/tmp/fastcgi;
  uwsgi_temp_path %[2]s/tmp/uwsgi;
  scgi_temp_path %[2]s/tmp/scgi;
  server {
    listen %[4]s ssl;
    server_name %[5]s;
    ssl_certificate %[2]s/portal.pem;
    ssl_certificate_key %[2]s/portal.key;
    location / {
      proxy_pass https://%[6]s;
      proxy_ssl_verify on;
      proxy_ssl_verify_depth 2;
      proxy_ssl_trusted_certificate %[7]s;
      proxy_ssl_name %[8]s;
      proxy_ssl_server_name on;
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-Proto https;
      proxy_set_header X-Forwarded-Host $host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_set_header X-Original-URL https://$host$request_uri;
    }
  }
}
`, user, dir, filepath.Join(e.Dir, "logs"), net.JoinHostPort(e.listen(e.portalAddress()), fmt.Sprint(PortPortal)), portalHost,
		net.JoinHostPort(e.reach("haproxy-authelia", e.autheliaServiceAddress()), fmt.Sprint(PortAuthelia)), e.nginxTrustedCA(), e.autheliaServiceName())
}

// nginxTrustedCA is the CA nginx verifies authelia with; a test points it
// at another CA on purpose.
func (e *Env) nginxTrustedCA() string {
	if e.PortalTrustsOtherCA {
		return filepath.Join(e.Dir, "nginx", "other-ca.pem")
	}
	return filepath.Join(e.Dir, "tls", "ca.pem")
}

// startPortal starts nginx as the main pod's portal.
func (e *Env) startPortal(ctx context.Context) error {
	dir := filepath.Join(e.Dir, "nginx")
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return err
	}
	cert, key, err := e.issue(ctx, "portal", []string{portalHost})
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "portal.pem"), cert, 0o644); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "portal.key"), key, 0o600); err != nil {
		return err
	}
	if e.PortalTrustsOtherCA {
		other, err := newOtherCAPEM()
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, "other-ca.pem"), other, 0o644); err != nil {
			return err
		}
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := writeFile(conf, []byte(e.nginxConfig(dir)), 0o600); err != nil {
		return err
	}
	errorLog := filepath.Join(e.Dir, "logs", "nginx-error.log")
	p, err := e.launch(ctx, "nginx", []string{e.tools.nginx, "-c", conf, "-e", errorLog}, startOptions{
		dir: dir, detached: e.Detached, publish: map[int]string{PortPortal: e.portalAddress()}, image: e.Images.Nginx,
		before: [][]string{{e.tools.nginx, "-t", "-q", "-c", conf, "-e", errorLog}},
	})
	if err != nil {
		return err
	}
	// The portal answers for itself even when it cannot reach authelia:
	// wait for its TLS only; the suites judge what it passes on.
	u := &url.URL{Scheme: "https", Host: net.JoinHostPort(e.portalAddress(), fmt.Sprint(PortPortal))}
	return e.waitTLS(ctx, p, u.Host)
}
