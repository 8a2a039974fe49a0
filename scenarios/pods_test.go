package scenarios

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// zeroPodWorld is a cluster's world as the discovery leaves it when no pod
// of the node is Running: every planned role kept, with no pods. Nothing
// in it answers (no kubeconfig, OpenBao and Postgres on ports that refuse):
// a scenario that reached a server before it looked at the pods would fail
// for another reason than the one the test wants.
func zeroPodWorld(t *testing.T) *inventory.Inventory {
	t.Helper()
	dir := t.TempDir()
	file := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	str := func(s string) *string { return &s }
	one, two := 1, 2
	dbCreds := func(role string) facts.Secret {
		return facts.Secret{Path: "database/creds/" + role, Template: str("DATABASE_URL=postgres://{{ .Data.username }}:{{ .Data.password }}@postgres/" + role), Restart: true}
	}
	node := &facts.Node{Name: "directory", K8sPod: facts.K8sPod{Enable: true}, PodRoles: facts.PodRoles{Roles: map[string]facts.Role{
		"lldap": {Replicas: &two, Service: str("lldap"), Secrets: map[string]facts.Secret{
			"db.env":  dbCreds("lldap"),
			"tls.pem": {Path: "pki/issue/lldap", Template: str("{{ .Data.certificate }}"), Parameters: map[string]any{"common_name": "directory-lldap"}, Restart: true},
		}},
		"authelia": {Replicas: &one, Service: str("authelia"), Secrets: map[string]facts.Secret{"db.env": dbCreds("authelia")}},
		"worker": {Replicas: &one, Units: []string{"worker"}, Secrets: map[string]facts.Secret{
			"key-seed": {Path: "secret/data/worker", Field: str("seed"), Restart: true},
			"jwt":      {Path: "secret/data/worker", Field: str("jwt")},
		}},
	}}}
	roles := map[string]*inventory.Role{inventory.MainRole: {}}
	for name, r := range node.PodRoles.Roles {
		roles[name] = &inventory.Role{Secrets: r.Secrets}
	}
	// The Services are there, with no ready pod behind them.
	for _, name := range []string{"lldap", "authelia"} {
		roles[name].Service = &inventory.Endpoint{Name: "directory-" + name, Address: "10.0.0.1", Forwarded: map[int]string{}, Unreachable: "no ready pod"}
	}
	return &inventory.Inventory{
		Node: "directory", Roles: roles, Facts: node,
		Cluster: &inventory.Cluster{Namespace: "directory", Kubeconfig: file("kubeconfig", refusingKubeconfig)},
		LDAP: &inventory.LDAP{
			Role: "lldap", Host: "directory-lldap", Port: 6360, HTTPPort: 17170, CAFile: "/etc/ca.pem", BaseDN: "dc=example,dc=com",
			BindDN: "uid=authelia-bind,ou=people,dc=example,dc=com", BindPasswordFile: "/run/bind-password", User: "authelia-bind",
			AdminUser: "admin", AdminPasswordFile: file("admin-password", "secret\n"),
		},
		Authelia: &inventory.Authelia{Role: "authelia", Host: "auth.example.com", CAFile: "/etc/authelia-ca.pem"},
		Postgres: &inventory.Postgres{Role: "lldap", UsersTable: "users"},
		OpenBao:  &inventory.OpenBao{Address: "http://127.0.0.1:1", TokenFile: file("token", "t\n")},
		Portal:   &inventory.Portal{URL: "https://auth.example.com", Address: "127.0.0.1:1"},
		Rotation: &inventory.Rotation{
			Restart:   &inventory.SecretRef{Role: "worker", File: "key-seed"},
			NoRestart: &inventory.SecretRef{Role: "worker", File: "jwt"},
		},
	}
}

// refusingKubeconfig names an API server on a port that refuses.
const refusingKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`

// localWorld is the world of a local inventory, with the cluster it
// names.
func localWorld(t *testing.T, inv *inventory.Inventory) world.World {
	t.Helper()
	w, err := world.Local(inv)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestRoleWithNoRunningPodFails: a per-pod scenario on a role with no
// Running pod fails naming the role and its planned replicas, before it
// dials anything (and the rotations before they revoke or write
// anything), instead of looping zero times and passing; a missing main
// pod fails the scenarios that read the node's files in it.
func TestRoleWithNoRunningPodFails(t *testing.T) {
	want := map[string]string{
		"ldap/service-ldaps-bind":                          "role main has no Running pod (1 planned): the node's files are read there",
		"ldap/each-pod-binds":                              "role lldap has no Running pod (2 planned)",
		"ldap/wrong-name-refused":                          "role main has no Running pod (1 planned)",
		"lldap-http/login-at-each-pod":                     "role lldap has no Running pod (2 planned)",
		"lldap-http/token-accepted-by-other-replica":       "role lldap has no Running pod (2 planned)",
		"postgres/data-outside-pod":                        "role lldap has no Running pod (2 planned)",
		"secrets/files-hold-their-values":                  "role authelia has no Running pod (1 planned); role lldap has no Running pod (2 planned); role worker has no Running pod (1 planned)",
		"secrets/service-started-after-secrets":            "role authelia has no Running pod (1 planned); role lldap has no Running pod (2 planned); role worker has no Running pod (1 planned)",
		"secrets/identity-not-readable":                    "role authelia has no Running pod (1 planned); role lldap has no Running pod (2 planned); role worker has no Running pod (1 planned)",
		"rotation/new-credential-restarts-authelia":        "note each pod and its credential: role authelia has no Running pod (1 planned)",
		"rotation/new-credential-restarts-lldap-replicas":  "note each pod and its credential: role lldap has no Running pod (2 planned)",
		"rotation/restart-secret-restarts":                 "role worker has no Running pod (1 planned)",
		"rotation/secret-without-restart-restarts-nothing": "role worker has no Running pod (1 planned)",
		"rotation/sidecar-restart-restarts-nothing":        "note each pod's service, sidecar and secrets: role worker has no Running pod (1 planned)",
		"rotation/sidecar-restart-restarts-pki":            "note each pod's service, sidecar and secrets: role lldap has no Running pod (2 planned)",
	}
	var ids []string
	for id := range want {
		ids = append(ids, regexp.QuoteMeta(id))
	}
	re := regexp.MustCompile("^(" + strings.Join(ids, "|") + ")$")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	results := Run(ctx, localWorld(t, zeroPodWorld(t)), Suites(), Options{Parallel: 4, Patience: time.Second, Run: re, Disruptive: true})
	if len(results) != len(want) {
		t.Errorf("ran %d scenarios, want %d", len(results), len(want))
	}
	for _, r := range results {
		if r.Status != Failed || !strings.Contains(r.Reason, want[r.ID()]) {
			t.Errorf("%s: %s: %s\nwant a failure naming %q", r.ID(), r.Status, r.Reason, want[r.ID()])
		}
		// A disruptive scenario's last step waits for the pods to settle.
		steps := slices.DeleteFunc(slices.Clone(r.Steps), func(s StepResult) bool { return s.Name == SettleStep })
		if r.Status == Failed && len(steps) != 1 {
			t.Errorf("%s failed at step %d: a role with no pod must stop it at its first", r.ID(), len(steps))
		}
	}
}

func TestNoRunningPodMessage(t *testing.T) {
	inv := zeroPodWorld(t)
	for role, want := range map[string]string{
		"lldap":            "role lldap has no Running pod (2 planned)",
		inventory.MainRole: "role main has no Running pod (1 planned)",
		"unknown":          "role unknown has no Running pod",
	} {
		if _, err := podsOf(inv, role); err == nil || err.Error() != want {
			t.Errorf("podsOf(%s) = %v, want %q", role, err, want)
		}
	}
	inv.Facts = nil
	if _, err := podsOf(inv, "lldap"); err == nil || err.Error() != "role lldap has no Running pod" {
		t.Errorf("without the node: %v", err)
	}
	inv.Roles["lldap"].Pods = []inventory.Endpoint{{Name: "directory-lldap-0"}}
	if pods, err := podsOf(inv, "lldap"); err != nil || len(pods) != 1 {
		t.Errorf("a role with a pod: %v %v", pods, err)
	}
}

// TestRotationRolesAreTheNodes: the credential rotations rotate the role
// that serves the ldap contract and the role that runs authelia, whatever
// the node names them.
func TestRotationRolesAreTheNodes(t *testing.T) {
	inv := zeroPodWorld(t)
	rename := func(from, to string) {
		inv.Roles[to], inv.Facts.PodRoles.Roles[to] = inv.Roles[from], inv.Facts.PodRoles.Roles[from]
		delete(inv.Roles, from)
		delete(inv.Facts.PodRoles.Roles, from)
	}
	rename("lldap", "directory-server")
	rename("authelia", "sso")
	inv.LDAP.Role, inv.Postgres.Role, inv.Authelia.Role = "directory-server", "directory-server", "sso"
	want := map[string]string{
		"rotation/new-credential-restarts-lldap-replicas": "role directory-server has no Running pod (2 planned)",
		"rotation/new-credential-restarts-authelia":       "role sso has no Running pod (1 planned)",
	}
	results := Run(context.Background(), localWorld(t, inv), Suites(), Options{Patience: time.Second, Run: regexp.MustCompile(`^rotation/new-credential-`), Disruptive: true})
	for _, r := range results {
		if r.Status != Failed || !strings.Contains(r.Reason, want[r.ID()]) {
			t.Errorf("%s: %s: %s\nwant a failure naming %q", r.ID(), r.Status, r.Reason, want[r.ID()])
		}
	}
	inv.LDAP, inv.Authelia = nil, nil
	want = map[string]string{
		"rotation/new-credential-restarts-lldap-replicas": "the inventory has no ldap contract",
		"rotation/new-credential-restarts-authelia":       "node directory has no role that runs authelia",
	}
	for _, r := range Run(context.Background(), localWorld(t, inv), Suites(), Options{Patience: time.Second, Run: regexp.MustCompile(`^rotation/new-credential-`), Disruptive: true}) {
		if r.Status != Skipped || !strings.HasPrefix(r.Reason, want[r.ID()]) {
			t.Errorf("%s: %s: %s\nwant a skip saying %q", r.ID(), r.Status, r.Reason, want[r.ID()])
		}
	}
}
