package inventory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const good = `
node: directory
roles:
  lldap:
    server: slapd
    service: {name: directory-lldap.ns.svc.cluster.local, address: 127.0.1.10, ports: {ldaps: 6360}}
    pods:
      - {name: directory-lldap-0, address: 127.0.1.1, ports: {ldap: 3890, ldaps: 6360}}
ldap:
  role: lldap
  host: directory-lldap.ns.svc.cluster.local
  port: 6360
  caFile: ca.pem
  baseDN: dc=example,dc=com
  bindDN: uid=authelia-bind,ou=people,dc=example,dc=com
  bindPasswordFile: secrets/bind
postgres: {role: lldap, dsnFile: secrets/dsn}
`

func dir(t *testing.T) string {
	d := t.TempDir()
	os.MkdirAll(filepath.Join(d, "secrets"), 0o700)
	for _, f := range []string{"ca.pem", "secrets/bind", "secrets/dsn"} {
		os.WriteFile(filepath.Join(d, f), []byte("x\n"), 0o600)
	}
	return d
}

func TestLoad(t *testing.T) {
	d := dir(t)
	path := filepath.Join(d, "inv.yaml")
	os.WriteFile(path, []byte(good), 0o644)
	inv, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if inv.LDAP.CAFile != filepath.Join(d, "ca.pem") || inv.LDAP.User != "authelia-bind" {
		t.Errorf("ldap = %+v", inv.LDAP)
	}
	if hp, ok := inv.Roles["lldap"].Pods[0].Dial(6360); !ok || hp != "127.0.1.1:6360" {
		t.Errorf("Dial(6360) = %s, %v", hp, ok)
	}
	// What Write writes, Load reads back the same.
	out := filepath.Join(d, "again.yaml")
	if err := inv.Write(out); err != nil {
		t.Fatal(err)
	}
	again, err := Load(out)
	if err != nil || again.LDAP.CAFile != inv.LDAP.CAFile || again.Roles["lldap"].Service.Name != inv.Roles["lldap"].Service.Name {
		t.Errorf("round trip: %v %+v", err, again)
	}
}

func TestBadInventoriesNameTheField(t *testing.T) {
	d := dir(t)
	cases := map[string]string{
		strings.Replace(good, "node: directory", "node: ''", 1):                                                                                            "node: the node's name is missing",
		strings.Replace(good, "address: 127.0.1.1,", "address: pod-zero,", 1):                                                                              `roles.lldap.pods[0].address: "pod-zero" is not an IP address`,
		strings.Replace(good, "ldaps: 6360}}\n", "ldaps: 70000}}\n", 1):                                                                                    "roles.lldap.service.ports.ldaps: 70000 is no port",
		strings.Replace(good, "  role: lldap\n  host", "  role: ldap\n  host", 1):                                                                          `ldap.role: "ldap" is no role of the inventory`,
		strings.Replace(good, "caFile: ca.pem", "caFile: missing.pem", 1):                                                                                  "ldap.caFile: " + filepath.Join(d, "missing.pem") + ": no such file",
		strings.Replace(good, "dsnFile: secrets/dsn", "dsnFile: ''", 1):                                                                                    "postgres.dsnFile: missing",
		strings.Replace(good, "node: directory", "node: directory\nnodes: x", 1):                                                                           `unknown field "nodes"`,
		strings.Replace(good, "    pods:\n      - {name: directory-lldap-0, address: 127.0.1.1, ports: {ldap: 3890, ldaps: 6360}}\n", "    pods: []\n", 1): "roles.lldap.pods: the role has no pods",
	}
	for doc, want := range cases {
		_, err := Parse([]byte(doc), d)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q, got %v", want, err)
		}
	}
	if _, err := Load(filepath.Join(d, "nope.yaml")); err == nil || !strings.Contains(err.Error(), "nope.yaml: no such file") {
		t.Errorf("missing file: %v", err)
	}
}

// The example of docs/inventory.md is a valid inventory, with every part a
// suite reads.
func TestDocsExampleLoads(t *testing.T) {
	page, err := os.ReadFile("../../docs/inventory.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "```yaml\n")
	example, _, closed := strings.Cut(rest, "```\n")
	if !ok || !closed {
		t.Fatal("docs/inventory.md has no ```yaml block")
	}
	// The files the example names, which Validate asks for.
	dir := t.TempDir()
	for _, f := range []string{"facts.json", "kubeconfig", "tls/ca.pem", "secrets/bind-password", "secrets/postgres-dsn", "secrets/openbao-token", "secrets/authelia-storage-dsn"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), nil, 0o600)
	}
	inv, err := Parse([]byte(example), dir)
	if err != nil {
		t.Fatalf("docs/inventory.md's example: %v", err)
	}
	if inv.LDAP == nil || inv.Postgres == nil || inv.OpenBao == nil || inv.Portal == nil || inv.Rotation == nil || inv.Cluster == nil || len(inv.Roles["lldap"].Pods) != 2 {
		t.Errorf("docs/inventory.md's example lacks a part: %+v", inv)
	}
	if inv.LDAP.CAFile != filepath.Join(dir, "tls", "ca.pem") {
		t.Errorf("relative paths are taken from the inventory's folder: %s", inv.LDAP.CAFile)
	}
}
