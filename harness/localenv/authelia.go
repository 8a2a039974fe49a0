package localenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/harness/ready"
)

// Ports and names of the authelia role and the main pod's portal.
const (
	PortAuthelia = 9091
	PortPortal   = 8443
	portalDomain = "example.com"
	portalHost   = "auth." + portalDomain
)

// authelia is the authelia role: its pod with its sidecar, behind a
// Service of its own.
type authelia struct {
	site     *site
	postgres *postgres
	openbao  *openBao
}

// secrets are the authelia role's secrets, as its node module
// gives them: its own keys from KV, the reader's bind password, a
// credential of the database engine and a certificate of the PKI engine
// for its Service (Known Deviations: it serves HTTPS from tls.pem).
func (a *authelia) secrets() map[string]facts.Secret {
	str := func(s string) *string { return &s }
	secrets := map[string]facts.Secret{
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
			Parameters: map[string]any{"common_name": a.site.autheliaServiceName(), "ttl": "24h"}},
	}
	if a.site.Faults.AutheliaStaticCredential {
		secrets["db-username"] = facts.Secret{Path: "secret/data/authelia/static-db", Field: str("username"), Restart: true}
		secrets["db-password"] = facts.Secret{Path: "secret/data/authelia/static-db", Field: str("password"), Restart: true}
	}
	return secrets
}

// autheliaSettings are where an authelia finds what its configuration
// names. They are its CAs' folder, the address it listens on, its
// secrets' folder (the pod's /run/secrets), the lldap role's Service
// (LDAPS), the Postgres address and database, where it writes
// notifications, and its reader's bind password file. Its database
// credential is in files of its secrets (db-username, db-password), or in
// its environment (a pod whose db.env the supervisor reads).
type autheliaSettings struct {
	trusted, listen, secrets, ldap, postgres, database, notifier, bindPassword string
	credentialFiles                                                            bool
	// metrics, when set, is the address of the metrics server
	// (tcp://:PORT/PATH), as the node's metrics of the role give it.
	metrics string
}

// autheliaConfig is authelia's configuration: its LDAP backend the lldap
// role's Service over LDAPS, verified against the PKI's CA, its storage
// the Postgres out of the pod with the dynamic credential, HTTPS from its
// pod's tls.pem. Secrets come from files, through the template filter,
// or from its environment.
func (s *site) autheliaConfig(a autheliaSettings) string {
	credential := ""
	if a.credentialFiles {
		credential = fmt.Sprintf("    username: '{{ secret \"%[1]s/db-username\" }}'\n    password: '{{ secret \"%[1]s/db-password\" }}'\n", a.secrets)
	}
	telemetry := ""
	if a.metrics != "" {
		telemetry = fmt.Sprintf("telemetry:\n  metrics:\n    enabled: true\n    address: '%s'\n", a.metrics)
	}
	return fmt.Sprintf(`# authelia of the podroles test environment; see harness/localenv
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
    password: '{{ secret "%[11]s" }}'
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
    database: '%[13]s'
%[12]snotifier:
  disable_startup_check: true
  filesystem:
    filename: '%[10]s/notifications.txt'
%[14]s`, a.trusted, a.listen, a.secrets, a.ldap, s.serviceName(), baseDN, portalDomain, portalHost, a.postgres, a.notifier, a.bindPassword, credential, a.database, telemetry)
}

// config is the configuration of the local environment's authelia.
func (a *authelia) config() string {
	s := a.site
	secrets := s.autheliaSecretsDir()
	return s.autheliaConfig(autheliaSettings{
		trusted: filepath.Join(s.Dir, "tls", "trusted"), listen: net.JoinHostPort(s.listen(s.autheliaPodAddress()), fmt.Sprint(PortAuthelia)), secrets: secrets,
		ldap:     net.JoinHostPort(s.reach("haproxy", s.serviceAddress()), fmt.Sprint(PortLDAPS)),
		postgres: a.postgres.reachable(), database: "authelia", notifier: filepath.Join(s.Dir, "authelia"),
		bindPassword: filepath.Join(secrets, "bind-password"), credentialFiles: true,
	})
}

// start starts the authelia role's pod: its sidecar, then authelia.
func (a *authelia) start(ctx context.Context) error {
	s := a.site
	if err := a.openbao.startSidecar(ctx, s.autheliaPodName(), s.autheliaSecretsDir(), a.secrets()); err != nil {
		return err
	}
	dir := filepath.Join(s.Dir, "authelia")
	trusted := filepath.Join(s.Dir, "tls", "trusted")
	for _, d := range []string{dir, trusted} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := writeFile(filepath.Join(trusted, "openbao-ca.crt"), s.caPEM, 0o644); err != nil {
		return err
	}
	conf := filepath.Join(dir, "configuration.yml")
	if err := writeFile(conf, []byte(a.config()), 0o600); err != nil {
		return err
	}
	argv, err := s.podCommand(s.autheliaPodName(), "authelia", s.autheliaSecretsDir(), a.secrets(), nil, []string{s.tools.authelia, "--config", conf})
	if err != nil {
		return err
	}
	p, err := s.launch(ctx, "authelia", argv, launchOptions{
		dir: dir, env: []string{"X_AUTHELIA_CONFIG_FILTERS=template"},
		publish: map[int]string{PortAuthelia: s.autheliaPodAddress()}, image: s.Images.Authelia,
	})
	if err != nil {
		return err
	}
	// Ready once its health answers over HTTPS verified against the
	// environment's CA for its Service's name.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.caPEM)
	return ready.HTTP(ctx, p, "https://"+net.JoinHostPort(s.autheliaPodAddress(), fmt.Sprint(PortAuthelia))+"/api/health",
		&tls.Config{RootCAs: pool, ServerName: s.autheliaServiceName()})
}

// startService starts HAProxy as the authelia role's Service, once
// authelia runs (a container gets its address only then).
func (a *authelia) startService(ctx context.Context) error {
	s := a.site
	config := haproxyDefaults + autheliaFrontend(s.listen(s.autheliaServiceAddress()), s.reach("authelia", s.autheliaPodAddress()))
	return startHAProxy(ctx, s, "haproxy-authelia", config, map[int]string{PortAuthelia: s.autheliaServiceAddress()}, net.JoinHostPort(s.autheliaServiceAddress(), fmt.Sprint(PortAuthelia)))
}

// portal is nginx as the main pod's portal, in front of the authelia
// role's Service.
type portal struct {
	site    *site
	openbao *openBao
	// name names it (its folder and its logs), at is its address, and
	// upstream the authelia Service it passes to: the local
	// environment's when empty.
	name, at, upstream string
}

// nginxConfig is the main pod's portal: HTTPS for the portal's name, and a
// proxy to the authelia role's Service over HTTPS that verifies its
// certificate against the PKI's CA.
func (pt *portal) nginxConfig(dir string) string {
	s := pt.site
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	return fmt.Sprintf(`# the portal of the main pod; see harness/localenv
%[1]s
daemon off;
# One process, so that nothing of nginx outlives the PID the environment
# stops.
master_process off;
pid %[2]s/nginx.pid;
error_log %[3]s/%[9]s-error.log info;
events { worker_connections 64; }
http {
  access_log %[3]s/%[9]s-access.log;
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
`, user, dir, filepath.Join(s.Dir, "logs"), net.JoinHostPort(s.listen(pt.at), fmt.Sprint(PortPortal)), portalHost,
		pt.upstream, pt.trustedCA(dir), s.autheliaServiceName(), pt.name)
}

// trustedCA is the CA nginx verifies authelia with; a test points it at
// another CA on purpose.
func (pt *portal) trustedCA(dir string) string {
	if pt.site.Faults.PortalTrustsOtherCA {
		return filepath.Join(dir, "other-ca.pem")
	}
	return filepath.Join(pt.site.Dir, "tls", "ca.pem")
}

// start starts nginx as the main pod's portal.
func (pt *portal) start(ctx context.Context) error {
	s := pt.site
	if pt.upstream == "" {
		pt.upstream = net.JoinHostPort(s.reach("haproxy-authelia", s.autheliaServiceAddress()), fmt.Sprint(PortAuthelia))
	}
	dir := filepath.Join(s.Dir, pt.name)
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return err
	}
	cert, key, err := pt.openbao.issue(ctx, "portal", []string{portalHost})
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "portal.pem"), cert, 0o644); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "portal.key"), key, 0o600); err != nil {
		return err
	}
	if s.Faults.PortalTrustsOtherCA {
		other, err := newOtherCAPEM()
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, "other-ca.pem"), other, 0o644); err != nil {
			return err
		}
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := writeFile(conf, []byte(pt.nginxConfig(dir)), 0o600); err != nil {
		return err
	}
	errorLog := filepath.Join(s.Dir, "logs", pt.name+"-error.log")
	p, err := s.launch(ctx, pt.name, []string{s.tools.nginx, "-c", conf, "-e", errorLog}, launchOptions{
		dir: dir, publish: map[int]string{PortPortal: pt.at}, image: s.Images.Nginx,
		before: [][]string{{s.tools.nginx, "-t", "-q", "-c", conf, "-e", errorLog}},
	})
	if err != nil {
		return err
	}
	// The portal answers for itself even when it cannot reach authelia:
	// wait for its TLS only; the suites judge what it passes on.
	return ready.TLS(ctx, p, net.JoinHostPort(pt.at, fmt.Sprint(PortPortal)))
}
