package inventory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fediversity/podroles/facts"
)

const good = `
node: directory
factsFile: facts.json
roles:
  lldap:
    standIn: slapd
    service: {name: directory-lldap.ns.svc.cluster.local, address: 127.0.1.10, ports: {ldaps: 6360}}
    pods:
      - {name: directory-lldap-0, address: 127.0.1.1, ports: {ldap: 3890, ldaps: 6360}}
  main:
    pods:
      - {name: directory-0, address: 127.0.1.50, rootDir: main}
ldap:
  port: 6360
  baseDN: dc=example,dc=com
  bindDN: uid=authelia-bind,ou=people,dc=example,dc=com
postgres: {role: lldap}
`

// node is a node as podroles facts would give it: a role of lldap with a
// secret, the ldap contract, a role of authelia.
func node() *facts.Node {
	str := func(s string) *string { return &s }
	one, two := 1, 2
	return &facts.Node{
		Name: "directory",
		PodRoles: facts.PodRoles{Roles: map[string]facts.Role{
			"lldap":    {Replicas: &two, Service: str("lldap"), Secrets: map[string]facts.Secret{"jwt": {Path: "secret/data/lldap/jwt", Field: str("value"), Restart: true}}},
			"authelia": {Replicas: &one, Service: str("authelia")},
			"unasked":  {Service: str("lldap")},
		}},
		LLDAP: facts.LLDAP{Host: "directory-lldap.ns.svc.cluster.local", ReaderBindPasswordFile: str("/var/lib/lldap-reader/bind-password"),
			TLS: facts.TLS{Enable: true, CAFile: str("/etc/ssl/ca.pem")}},
		Authelia: facts.Authelia{Host: "directory-authelia.ns.svc.cluster.local", CAFile: str("/etc/ssl/ca.pem")},
	}
}

func dir(t *testing.T) string {
	d := t.TempDir()
	os.MkdirAll(filepath.Join(d, "secrets"), 0o700)
	for _, f := range []string{"secrets/bind", "secrets/dsn"} {
		os.WriteFile(filepath.Join(d, f), []byte("x\n"), 0o600)
	}
	data, _ := facts.Marshal(&facts.Document{Version: facts.FactsVersion, Nodes: []*facts.Node{node()}})
	os.WriteFile(filepath.Join(d, "facts.json"), data, 0o644)
	return d
}

func TestLoad(t *testing.T) {
	d := dir(t)
	path := filepath.Join(d, "inv.yaml")
	os.WriteFile(path, []byte(good), 0o644)
	inv, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The node's: the contract and the roles' secrets.
	l := inv.LDAP
	if l.Role != "lldap" || l.Host != "directory-lldap.ns.svc.cluster.local" || l.CAFile != "/etc/ssl/ca.pem" || l.BindPasswordFile != "/var/lib/lldap-reader/bind-password" || l.User != "authelia-bind" {
		t.Errorf("ldap = %+v", l)
	}
	if a := inv.Authelia; a == nil || a.Role != "authelia" || a.Host != "directory-authelia.ns.svc.cluster.local" {
		t.Errorf("authelia = %+v", a)
	}
	if s := inv.Roles["lldap"].Secrets["jwt"]; s.Path != "secret/data/lldap/jwt" || !s.Restart || inv.Facts == nil || inv.Facts.Name != "directory" {
		t.Errorf("secrets %+v, facts %v", inv.Roles["lldap"].Secrets, inv.Facts)
	}
	if inv.Roles[MainRole].Pods[0].RootDir != filepath.Join(d, "main") {
		t.Errorf("main pod = %+v", inv.Roles[MainRole].Pods[0])
	}
	if hp, ok := inv.Roles["lldap"].Pods[0].Dial(6360); !ok || hp != "127.0.1.1:6360" {
		t.Errorf("Dial(6360) = %s, %v", hp, ok)
	}
	// What Write writes, Load reads back the same: the node's values
	// written out agree with the node.
	out := filepath.Join(d, "again.yaml")
	if err := inv.Write(out); err != nil {
		t.Fatal(err)
	}
	again, err := Load(out, nil)
	if err != nil || again.LDAP.CAFile != inv.LDAP.CAFile || again.Roles["lldap"].Service.Name != inv.Roles["lldap"].Service.Name {
		t.Errorf("round trip: %v %+v", err, again)
	}
	// A node given beats the facts file.
	n := node()
	n.LLDAP.Host = "elsewhere.ns.svc.cluster.local"
	if inv, err := Load(path, n); err != nil || inv.LDAP.Host != "elsewhere.ns.svc.cluster.local" {
		t.Errorf("with a node given: %v, %+v", err, inv)
	}
}

// TestDriftNamesBothValues: where the inventory says otherwise than the
// node, the load fails, naming the field, the node's option and both
// values, each of them.
func TestDriftNamesBothValues(t *testing.T) {
	d := dir(t)
	cases := map[string][]string{
		strings.Replace(good, "  port: 6360", "  host: other.ns.svc.cluster.local\n  port: 6360", 1): {
			`ldap.host is "other.ns.svc.cluster.local" in the inventory, but the node's fediversity.lldap.host is "directory-lldap.ns.svc.cluster.local"`,
		},
		strings.Replace(good, "  port: 6360", "  caFile: /etc/ssl/other.pem\n  bindPasswordFile: /run/secrets/bind\n  port: 6360", 1): {
			`ldap.caFile is "/etc/ssl/other.pem" in the inventory, but the node's fediversity.lldap.tls.caFile is "/etc/ssl/ca.pem"`,
			`ldap.bindPasswordFile is "/run/secrets/bind" in the inventory, but the node's fediversity.lldap.readerBindPasswordFile is "/var/lib/lldap-reader/bind-password"`,
		},
		strings.Replace(good, "    standIn: slapd\n", "    standIn: slapd\n    secrets: {jwt: {path: secret/data/lldap/jwt, field: value}}\n", 1): {
			`roles.lldap.secrets.jwt is {"path":"secret/data/lldap/jwt","field":"value","encoding":null,"variable":null,"template":null,"parameters":null,"restart":false} in the inventory, but the node's fediversity.podRoles.roles.lldap.secrets.jwt is {"path":"secret/data/lldap/jwt","field":"value","encoding":null,"variable":null,"template":null,"parameters":null,"restart":true}`,
		},
		strings.Replace(good, "    standIn: slapd\n", "    standIn: slapd\n    secrets: {jwt: {path: secret/data/lldap/jwt, field: value, restart: true}, extra: {path: secret/data/x, field: y}}\n", 1): {
			"roles.lldap.secrets.extra is in the inventory, but the node has no fediversity.podRoles.roles.lldap.secrets.extra",
		},
		strings.Replace(good, "  main:\n", "  unasked:\n    pods: [{name: u, address: 127.0.1.9}]\n  main:\n", 1): {
			"roles.unasked is in the inventory, but node directory requests no role unasked",
		},
		strings.Replace(good, "postgres:", "authelia: {host: auth.example.com}\npostgres:", 1): {
			`authelia.host is "auth.example.com" in the inventory, but the node's fediversity.authelia.host is "directory-authelia.ns.svc.cluster.local"`,
		},
		strings.Replace(good, "node: directory", "node: other", 1): {
			"factsFile: " + filepath.Join(d, "facts.json") + " has no node other (it has directory)",
		},
	}
	for doc, wants := range cases {
		_, err := Parse([]byte(doc), d, nil)
		for _, want := range wants {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("want %q, got %v", want, err)
			}
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("an error of more than one line: %v", err)
		}
	}
	// A node that gives a reader nothing to verify with.
	n := node()
	n.LLDAP.TLS.Enable = false
	if _, err := Parse([]byte(good), d, n); err == nil || !strings.Contains(err.Error(), "node directory: fediversity.lldap.tls.enable is false") {
		t.Errorf("without TLS: %v", err)
	}
	n = node()
	n.Name = "other"
	if _, err := Parse([]byte(good), d, n); err == nil || !strings.Contains(err.Error(), `node is "directory" in the inventory, but the facts are of node "other"`) {
		t.Errorf("another node: %v", err)
	}
	// No node at all.
	if _, err := Parse([]byte(strings.Replace(good, "factsFile: facts.json\n", "", 1)), d, nil); err == nil || !strings.Contains(err.Error(), "factsFile: missing, and no node's sources given") {
		t.Errorf("no node: %v", err)
	}
}

func TestBadInventoriesNameTheField(t *testing.T) {
	d := dir(t)
	cases := map[string]string{
		strings.Replace(good, "node: directory", "node: ''", 1):                                                                                            "node: the node's name is missing",
		strings.Replace(good, "address: 127.0.1.1,", "address: pod-zero,", 1):                                                                              `roles.lldap.pods[0].address: "pod-zero" is not an IP address`,
		strings.Replace(good, "ldaps: 6360}}\n", "ldaps: 70000}}\n", 1):                                                                                    "roles.lldap.service.ports.ldaps: 70000 is no port",
		strings.Replace(good, "role: lldap}", "role: lldap, urlSecret: db}", 1):                                                                            `postgres.urlSecret: "db" is no secret of role lldap`,
		strings.Replace(good, "role: lldap}", "role: lldap, dsnFile: secrets/dsn}", 1):                                                                     "postgres.dsnFile: no longer read",
		strings.Replace(good, "node: directory", "node: directory\nnodes: x", 1):                                                                           `unknown field "nodes"`,
		strings.Replace(good, "    pods:\n      - {name: directory-lldap-0, address: 127.0.1.1, ports: {ldap: 3890, ldaps: 6360}}\n", "    pods: []\n", 1): "roles.lldap.pods: the role has no pods",
		strings.Replace(good, "postgres:", "openbao: {address: http://127.0.1.30:8200, tokenFile: secrets/bind, renderInterval: often}\npostgres:", 1):     `openbao.renderInterval: "often" is no duration`,
	}
	for doc, want := range cases {
		_, err := Parse([]byte(doc), d, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q, got %v", want, err)
		}
	}
	if _, err := Load(filepath.Join(d, "nope.yaml"), nil); err == nil || !strings.Contains(err.Error(), "nope.yaml: no such file") {
		t.Errorf("missing file: %v", err)
	}
	// The main pod's role name is the plan's.
	if MainRole != "main" {
		t.Errorf("MainRole = %q", MainRole)
	}
}

// The example of docs/inventory.md is a valid inventory, with every part a
// suite reads.
func TestDocsExampleLoads(t *testing.T) {
	page, err := os.ReadFile("../docs/inventory.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "```yaml\n")
	example, _, closed := strings.Cut(rest, "```\n")
	if !ok || !closed {
		t.Fatal("docs/inventory.md has no ```yaml block")
	}
	// The files the example names, which Validate asks for, and the facts
	// of a node whose contract the example's Service serves.
	dir := t.TempDir()
	for _, f := range []string{"kubeconfig", "tls/ca.pem", "secrets/openbao-token", "secrets/authelia-storage-dsn"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), nil, 0o600)
	}
	n := node()
	n.LLDAP.Host = "directory-lldap.directory.svc.cluster.local"
	n.PodRoles.Roles["lldap"].Secrets["key-seed"] = facts.Secret{Path: "secret/data/lldap/key-seed", Restart: true}
	field, variable := "env", "LLDAP_LDAP_USER_PASS"
	n.PodRoles.Roles["lldap"].Secrets["bind-password"] = facts.Secret{Path: "secret/data/lldap/authelia-bind", Field: &field, Variable: &variable}
	url := "LLDAP_DATABASE_URL=postgres://{{ .Data.username }}:{{ .Data.password }}@postgres.directory.svc/lldap"
	n.PodRoles.Roles["lldap"].Secrets["db.env"] = facts.Secret{Path: "database/creds/lldap", Template: &url, Restart: true}
	data, _ := facts.Marshal(&facts.Document{Version: facts.FactsVersion, Nodes: []*facts.Node{n}})
	os.WriteFile(filepath.Join(dir, "facts.json"), data, 0o644)
	inv, err := Parse([]byte(example), dir, nil)
	if err != nil {
		t.Fatalf("docs/inventory.md's example: %v", err)
	}
	if inv.LDAP == nil || inv.Postgres == nil || inv.OpenBao == nil || inv.Portal == nil || inv.Rotation == nil || inv.Rotation.ReaderPassword == nil || inv.Cluster == nil || len(inv.Roles["lldap"].Pods) != 2 {
		t.Errorf("docs/inventory.md's example lacks a part: %+v", inv)
	}
	if inv.Portal.CAFile != filepath.Join(dir, "tls", "ca.pem") {
		t.Errorf("relative paths are taken from the inventory's folder: %s", inv.Portal.CAFile)
	}
	if inv.LDAP.Host != n.LLDAP.Host || inv.LDAP.CAFile != *n.LLDAP.TLS.CAFile {
		t.Errorf("the contract is the node's: %+v", inv.LDAP)
	}
}

// The ports of lldap are the node's where its image's variables state
// them: an inventory that gives another is refused, naming both; one that
// gives none gets the node's; and the LDAPS port must be one of the
// role's ports.
func TestLDAPPortsFromTheNode(t *testing.T) {
	d := dir(t)
	withPorts := func(ldaps string, rolePorts ...int) *facts.Node {
		n := node()
		n.PodRoles.Services = map[string]facts.Service{"lldap": {Variables: map[string]string{"LLDAP_LDAPS_OPTIONS__PORT": ldaps, "LLDAP_LDAP_PORT": "3890"}}}
		r := n.PodRoles.Roles["lldap"]
		for _, p := range rolePorts {
			r.Ports = append(r.Ports, facts.Port{Port: p, Protocol: "TCP"})
		}
		n.PodRoles.Roles["lldap"] = r
		return n
	}
	inv, err := Parse([]byte(good), d, withPorts("6360", 6360, 17170))
	if err != nil {
		t.Fatal(err)
	}
	if inv.LDAP.Port != 6360 || inv.LDAP.PlainPort != 3890 {
		t.Errorf("ports %d and %d, want the node's 6360 and 3890", inv.LDAP.Port, inv.LDAP.PlainPort)
	}
	for _, c := range []struct {
		node *facts.Node
		want string
	}{
		{withPorts("6361", 6361), `ldap.port is 6360 in the inventory, but the node's fediversity.podRoles.services.lldap.environment.LLDAP_LDAPS_OPTIONS__PORT is "6361"`},
		{withPorts("6360", 17170), "ldap.port is 6360, but it is none of the node's fediversity.podRoles.roles.lldap.ports (17170), which the role's Service has"},
	} {
		if _, err := Parse([]byte(good), d, c.node); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
	if _, err := Parse([]byte(strings.Replace(good, "  port: 6360\n", "  port: 6360\n  plainPort: 3891\n", 1)), d, withPorts("6360", 6360)); err == nil ||
		!strings.Contains(err.Error(), `ldap.plainPort is 3891 in the inventory, but the node's fediversity.podRoles.services.lldap.environment.LLDAP_LDAP_PORT is "3890"`) {
		t.Errorf("plain port: %v", err)
	}
}

// An OOM kill or a SIGKILL is a kill from outside, which no method makes
// for a restart; the supervisor's exit, or a crash's, is none.
func TestExitKilled(t *testing.T) {
	for _, c := range []struct {
		exit *Exit
		want bool
	}{
		{nil, false},
		{&Exit{Code: 1, Message: RestartMessagePrefix + "db.env"}, false},
		{&Exit{Code: 0}, false},
		{&Exit{Code: 143, Reason: "Error"}, false},
		{&Exit{Code: 137, Reason: "OOMKilled"}, true},
		{&Exit{Code: 137, Reason: "Error"}, true},
		{&Exit{Code: 1, Reason: "OOMKilled"}, true},
		{&Exit{Code: 0, Reason: "Completed", StoppedBy: "Container lldap failed liveness probe, will be restarted"}, true},
	} {
		if got := c.exit.Killed(); got != c.want {
			t.Errorf("%s: Killed %v, want %v", c.exit, got, c.want)
		}
	}
}
