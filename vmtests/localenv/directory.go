package vmtests

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/fediversity/podroles/internal/poll"
)

// The directory, as lldap lays it out: people and groups under one base.
const (
	baseDN   = "dc=example,dc=com"
	replicas = 2
)

// ssha hashes a password as {SSHA}, which slapd checks binds against.
func ssha(password string) string {
	salt := make([]byte, 8)
	rand.Read(salt)
	h := sha1.New()
	h.Write([]byte(password))
	h.Write(salt)
	return "{SSHA}" + base64.StdEncoding.EncodeToString(append(h.Sum(nil), salt...))
}

// directoryLDIF is the directory both replicas serve: the admin, the
// reader authelia-bind, and groups with members.
func (e *Env) directoryLDIF() string {
	people, groups := "ou=people,"+baseDN, "ou=groups,"+baseDN
	return fmt.Sprintf(`dn: %[1]s
objectClass: dcObject
objectClass: organization
o: example
dc: example

dn: %[2]s
objectClass: organizationalUnit
ou: people

dn: %[3]s
objectClass: organizationalUnit
ou: groups

dn: uid=admin,%[2]s
objectClass: inetOrgPerson
uid: admin
cn: Administrator
sn: Administrator
mail: admin@example.com
userPassword: %[4]s

dn: uid=authelia-bind,%[2]s
objectClass: inetOrgPerson
uid: authelia-bind
cn: authelia-bind
sn: authelia-bind
mail: authelia-bind@example.com
userPassword: %[5]s

dn: cn=lldap_admin,%[3]s
objectClass: groupOfUniqueNames
cn: lldap_admin
uniqueMember: uid=admin,%[2]s

dn: cn=lldap_strict_readonly,%[3]s
objectClass: groupOfUniqueNames
cn: lldap_strict_readonly
uniqueMember: uid=authelia-bind,%[2]s
uniqueMember: uid=admin,%[2]s
`, baseDN, people, groups, ssha(e.secrets.admin), ssha(e.secrets.bind))
}

// slapdConfig is one replica's slapd.conf: the directory in mdb under
// dir, TLS from the environment's certificate in tlsDir, passwords
// readable by no one but binds. schemaDir holds core.schema and its
// friends, modulesDir back_mdb ("" where slapd has it built in).
func (e *Env) slapdConfig(dir, tlsDir, schemaDir, modulesDir string) string {
	var b strings.Builder
	for _, schema := range []string{"core", "cosine", "inetorgperson", "nis"} {
		fmt.Fprintf(&b, "include %s/%s.schema\n", schemaDir, schema)
	}
	if modulesDir != "" {
		fmt.Fprintf(&b, "modulepath %s\nmoduleload back_mdb\n", modulesDir)
	}
	fmt.Fprintf(&b, `pidfile %[1]s/slapd.pid
argsfile %[1]s/slapd.args
TLSCACertificateFile %[2]s/ca.pem
TLSCertificateFile %[2]s/server.pem
TLSCertificateKeyFile %[2]s/server.key

database mdb
maxsize 67108864
suffix "%[3]s"
rootdn "cn=admin,%[3]s"
rootpw %[4]s
directory %[1]s/data
index objectClass eq
index uid eq
access to attrs=userPassword by self write by anonymous auth by * none
access to * by users read by * none
`, dir, tlsDir, baseDN, ssha(e.secrets.rootDN))
	return b.String()
}

// startDirectory loads the directory into each replica and starts them,
// each on its own loopback address as a pod of the role.
func (e *Env) startDirectory(ctx context.Context) error {
	if e.servesLLDAP() {
		return e.startLLDAP(ctx)
	}
	ldif := filepath.Join(e.Dir, "directory.ldif")
	if err := writeFile(ldif, []byte(e.directoryLDIF()), 0o600); err != nil {
		return err
	}
	for i := range replicas {
		name := e.directoryPod(i)
		dir := filepath.Join(e.Dir, name)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
			return err
		}
		conf := filepath.Join(dir, "slapd.conf")
		if err := writeFile(conf, []byte(e.slapdConfig(dir, filepath.Join(e.Dir, "tls"), e.tools.ldapSchema, e.tools.ldapModules)), 0o600); err != nil {
			return err
		}
		opts := startOptions{dir: dir, detached: e.Detached, publish: publishOn(e.podPorts(), e.podAddress(i)),
			before: [][]string{{e.tools.slapadd, "-f", conf, "-l", ldif}}}
		listen := e.listen(e.podAddress(i))
		urls := fmt.Sprintf("ldap://%s:%d/ ldaps://%s:%d/", listen, PortLDAP, listen, PortLDAPS)
		argv, err := e.podCommand(e.podName(i), e.podSecretsDir(i), e.lldapSecrets(), nil, []string{e.tools.slapd, "-d", "stats", "-f", conf, "-h", urls})
		if err != nil {
			return err
		}
		p, err := e.launch(ctx, name, argv, opts)
		if err != nil {
			return err
		}
		if err := e.waitTLS(ctx, p, net.JoinHostPort(e.podAddress(i), fmt.Sprint(PortLDAPS))); err != nil {
			return err
		}
	}
	return nil
}

// waitTLS waits until addr completes a TLS handshake with the
// environment's certificate, or p dies.
func (e *Env) waitTLS(ctx context.Context, p server, addr string) error {
	probe := poll.Probe{Endpoint: addr, Expect: p.label() + " to accept TLS", Within: 20 * time.Second}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		if !p.running() {
			return poll.Permanent(fmt.Errorf("%s exited: %s", p.label(), p.lastLines(5)))
		}
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: time.Second}, Config: &tls.Config{InsecureSkipVerify: true}} // readiness only: the suites verify
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

// runQuiet runs a tool to its end and returns what it printed.
func runQuiet(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// ChangePassword sets a user's password in every replica, bound as the
// directory's admin: the provisioning of lldap's reader, and a test's
// change that the contract's file does not follow. (lldap's replicas share
// one database: the second setting repeats the first.)
func (e *Env) ChangePassword(ctx context.Context, uid, password string) error {
	for i := range replicas {
		conn, err := ldap.DialURL(fmt.Sprintf("ldap://%s", net.JoinHostPort(e.podAddress(i), fmt.Sprint(PortLDAP))))
		if err != nil {
			return err
		}
		// slapd's root; lldap knows only its people, of which the admin.
		adminDN, adminPassword := "cn=admin,"+baseDN, e.secrets.rootDN
		if e.servesLLDAP() {
			adminDN, adminPassword = "uid=admin,ou=people,"+baseDN, e.secrets.admin
		}
		err = conn.Bind(adminDN, adminPassword)
		if err == nil {
			err = setPassword(conn, uid, password)
		}
		conn.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", e.directoryPod(i), err)
		}
	}
	return nil
}

// setPassword sets a person's password through conn, bound as an admin,
// with the password modify operation (RFC 3062): slapd hashes it as it
// is configured to, and lldap takes a password no other way over LDAP.
func setPassword(conn *ldap.Conn, uid, password string) error {
	dn := fmt.Sprintf("uid=%s,ou=people,%s", ldap.EscapeDN(uid), baseDN)
	if _, err := conn.PasswordModify(ldap.NewPasswordModifyRequest(dn, "", password)); err != nil {
		return fmt.Errorf("set the password of %s: %w", dn, err)
	}
	return nil
}
