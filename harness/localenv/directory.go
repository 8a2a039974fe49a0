package localenv

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-ldap/ldap/v3"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/harness/ready"
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

// directory is the lldap role's pods: two slapd replicas, or lldap's own
// image where the containers provider has it, with the role's secrets.
type directory struct {
	site     *site
	postgres *postgres
}

// ldif is the directory both replicas serve: the admin, the
// reader authelia-bind, and groups with members.
func (d *directory) ldif() string {
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
`, baseDN, people, groups, ssha(d.site.secrets.admin), ssha(d.site.secrets.bind))
}

// slapdTLS are the files of a replica's TLS: the CA, its certificate and
// its key (one file may hold both).
type slapdTLS struct{ ca, cert, key string }

// slapdConfig is one replica's slapd.conf: the directory in mdb under
// dir, TLS from tls, passwords readable by no one but binds. schemaDir
// holds core.schema and its friends, modulesDir back_mdb ("" where slapd
// has it built in).
func (d *directory) slapdConfig(dir string, tls slapdTLS, schemaDir, modulesDir string) string {
	var b strings.Builder
	for _, schema := range []string{"core", "cosine", "inetorgperson", "nis"} {
		fmt.Fprintf(&b, "include %s/%s.schema\n", schemaDir, schema)
	}
	if modulesDir != "" {
		fmt.Fprintf(&b, "modulepath %s\nmoduleload back_mdb\n", modulesDir)
	}
	fmt.Fprintf(&b, `pidfile %[1]s/slapd.pid
argsfile %[1]s/slapd.args
TLSCACertificateFile %[2]s
TLSCertificateFile %[5]s
TLSCertificateKeyFile %[6]s

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
`, dir, tls.ca, baseDN, ssha(d.site.secrets.rootDN), tls.cert, tls.key)
	return b.String()
}

// start loads the directory into each replica and starts them, each on
// its own loopback address as a pod of the role; with lldap's image, the
// replicas of lldap, which need OpenBao (ob) for their secrets.
func (d *directory) start(ctx context.Context, ob *openBao) error {
	s := d.site
	if s.servesLLDAP() {
		return d.startLLDAP(ctx, ob)
	}
	ldif := filepath.Join(s.Dir, "directory.ldif")
	if err := writeFile(ldif, []byte(d.ldif()), 0o600); err != nil {
		return err
	}
	for i := range replicas {
		name := s.directoryPod(i)
		dir := filepath.Join(s.Dir, name)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
			return err
		}
		conf := filepath.Join(dir, "slapd.conf")
		tls := slapdTLS{ca: filepath.Join(s.Dir, "tls", "ca.pem"), cert: filepath.Join(s.Dir, "tls", "server.pem"), key: filepath.Join(s.Dir, "tls", "server.key")}
		if err := writeFile(conf, []byte(d.slapdConfig(dir, tls, s.tools.ldapSchema, s.tools.ldapModules)), 0o600); err != nil {
			return err
		}
		opts := launchOptions{dir: dir, publish: publishOn(d.podPorts(), s.podAddress(i)),
			before: [][]string{{s.tools.slapadd, "-f", conf, "-l", ldif}}}
		listen := s.listen(s.podAddress(i))
		urls := fmt.Sprintf("ldap://%s:%d/ ldaps://%s:%d/", listen, PortLDAP, listen, PortLDAPS)
		argv, err := s.podCommand(s.podName(i), "lldap", s.podSecretsDir(i), d.secrets(), nil, []string{s.tools.slapd, "-d", "stats", "-f", conf, "-h", urls})
		if err != nil {
			return err
		}
		p, err := s.launch(ctx, name, argv, opts)
		if err != nil {
			return err
		}
		if err := ready.TLS(ctx, p, net.JoinHostPort(s.podAddress(i), fmt.Sprint(PortLDAPS))); err != nil {
			return err
		}
	}
	return nil
}

// changePassword sets a user's password in every replica, bound as the
// directory's admin: the provisioning of lldap's reader, and a test's
// change that the contract's file does not follow. (lldap's replicas share
// one database: the second setting repeats the first.)
func (d *directory) changePassword(ctx context.Context, uid, password string) error {
	s := d.site
	for i := range replicas {
		conn, err := ldap.DialURL(fmt.Sprintf("ldap://%s", net.JoinHostPort(s.podAddress(i), fmt.Sprint(PortLDAP))))
		if err != nil {
			return err
		}
		// slapd's root; lldap knows only its people, of which the admin.
		adminDN, adminPassword := "cn=admin,"+baseDN, s.secrets.rootDN
		if s.servesLLDAP() {
			adminDN, adminPassword = "uid=admin,ou=people,"+baseDN, s.secrets.admin
		}
		err = conn.Bind(adminDN, adminPassword)
		if err == nil {
			err = setPassword(conn, uid, password)
		}
		conn.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", s.directoryPod(i), err)
		}
	}
	return nil
}

// acceptPassword adds a second password to a person in every replica, so
// that a bind with either succeeds: a directory that takes a wrong
// password (a test's, on purpose). slapd checks a bind against each value
// of userPassword; lldap keeps one password, and is not changed so.
func (d *directory) acceptPassword(ctx context.Context, uid, password string) error {
	s := d.site
	if s.servesLLDAP() {
		return fmt.Errorf("lldap keeps one password per user: a second one is slapd's only")
	}
	req := ldap.NewModifyRequest(fmt.Sprintf("uid=%s,ou=people,%s", ldap.EscapeDN(uid), baseDN), nil)
	req.Add("userPassword", []string{ssha(password)})
	return d.modifyAsRoot(req)
}

// addMember makes a person a member of a group in every replica (slapd
// only: lldap's groups change through its API).
func (d *directory) addMember(ctx context.Context, group, uid string) error {
	if d.site.servesLLDAP() {
		return fmt.Errorf("lldap's groups change through its HTTP API: adding a member over LDAP is slapd's only")
	}
	req := ldap.NewModifyRequest(fmt.Sprintf("cn=%s,ou=groups,%s", ldap.EscapeDN(group), baseDN), nil)
	req.Add("uniqueMember", []string{fmt.Sprintf("uid=%s,ou=people,%s", ldap.EscapeDN(uid), baseDN)})
	return d.modifyAsRoot(req)
}

// modifyAsRoot makes one change in every replica of slapd, bound as its
// root: the replicas do not replicate.
func (d *directory) modifyAsRoot(req *ldap.ModifyRequest) error {
	s := d.site
	for i := range replicas {
		conn, err := ldap.DialURL(fmt.Sprintf("ldap://%s", net.JoinHostPort(s.podAddress(i), fmt.Sprint(PortLDAP))))
		if err != nil {
			return err
		}
		err = conn.Bind("cn=admin,"+baseDN, s.secrets.rootDN)
		if err == nil {
			err = conn.Modify(req)
		}
		conn.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", s.directoryPod(i), err)
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

// secrets are the secrets of the lldap role, as the node defines them in
// fediversity.podRoles.roles.lldap.secrets: one of each kind the spec
// has.
func (d *directory) secrets() map[string]facts.Secret {
	str := func(s string) *string { return &s }
	return map[string]facts.Secret{
		"jwt":            {Path: "secret/data/lldap/jwt", Field: str("value"), Encoding: str("base64")},
		"admin-password": {Path: "secret/data/lldap/env", Field: str("env"), Variable: str("LLDAP_LDAP_USER_PASS")},
		"key-seed":       {Path: "secret/data/lldap/key-seed", Field: str("value"), Restart: true},
		"db.env": {Path: "database/creds/lldap", Restart: true,
			Template: str(fmt.Sprintf("LLDAP_DATABASE_URL=postgres://{{ .Data.username }}:{{ .Data.password }}@%s/lldap", d.postgres.reachable()))},
		"tls.pem": {Path: "pki/issue/internal", Restart: true,
			Template:   str("{{ .Data.certificate }}\n{{ .Data.private_key }}"),
			Parameters: map[string]any{"common_name": d.site.serviceName(), "ttl": "1h"}},
	}
}
