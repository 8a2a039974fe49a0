package vmtests

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fediversity/podroles/internal/pki"
)

// lldap reads a PKCS#8 key; the PKI engine gives SEC 1 (EC) keys, Go's CA
// PKCS#8, others PKCS#1: each comes out as PKCS#8 that still pairs with
// its certificate.
func TestPKCS8PEM(t *testing.T) {
	ca, err := pki.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Issue("directory-lldap.directory.svc.cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(key)
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(parsed.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalECPrivateKey(ecKey)
	for name, in := range map[string][]byte{
		"PKCS#8":      key,
		"SEC 1":       pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}),
		"PKCS#1":      pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}),
		"another SEC": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER}),
	} {
		out, err := pkcs8PEM(in)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if b, _ := pem.Decode(out); b == nil || b.Type != "PRIVATE KEY" {
			t.Errorf("%s: not a PKCS#8 PEM block: %s", name, out)
			continue
		}
		if name == "PKCS#8" || name == "SEC 1" {
			if _, err := tls.X509KeyPair(cert, out); err != nil {
				t.Errorf("%s: the key no longer pairs with its certificate: %v", name, err)
			}
		}
	}
	for _, bad := range []string{"", "not PEM", string(cert)} {
		if _, err := pkcs8PEM([]byte(bad)); err == nil {
			t.Errorf("%.20q: no error", bad)
		}
	}
}

// lldap's configuration reads its secrets from the files its pod's
// sidecar writes: every file it names is a secret of the role, and the
// environment files are secrets with restart, so that lldap restarts with
// a rotated database URL.
func TestLLDAPReadsTheRoleSecrets(t *testing.T) {
	e := &Env{Options: Options{Dir: "/env", Node: "directory", Namespace: "directory", Loopback: "127.0.1", Provider: ProviderContainers, Images: DefaultImages}}
	e.run = containers{e}
	secrets := e.lldapSecrets()
	dir := filepath.Join(e.Dir, "lldap")
	var files []string
	for _, kv := range e.lldapEnv(0, dir) {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "LLDAP_") {
			t.Errorf("%s: lldap reads only LLDAP_ variables", name)
		}
		if strings.HasSuffix(name, "_FILE") {
			files = append(files, value)
		}
	}
	for _, f := range files {
		switch {
		case filepath.Dir(f) == e.podSecretsDir(0):
			if _, ok := secrets[filepath.Base(f)]; !ok {
				t.Errorf("%s is no secret of the role", f)
			}
		case f == filepath.Join(e.Dir, "tls", "server.pem"), f == filepath.Join(dir, "server.key"):
		case f == filepath.Join(dir, "server_key"):
			// LLDAP_KEY_FILE: a path lldap reads as a path (its _FILE
			// rule ignores key_file and cert_file), and writes once.
		default:
			t.Errorf("%s: neither a secret of the pod nor a file env up writes", f)
		}
	}
	if !slices.Contains(files, filepath.Join(e.podSecretsDir(0), "admin-password")) || !slices.Contains(files, filepath.Join(e.podSecretsDir(0), "jwt")) {
		t.Errorf("lldap's admin password and JWT secret are not from the pod's secrets: %v", files)
	}
	for _, f := range lldapEnvFiles {
		if s, ok := secrets[f]; !ok || !s.Restart {
			t.Errorf("%s: an environment file that is no secret with restart: lldap would keep a revoked credential", f)
		}
	}
	if e.directoryServer() != "lldap" || e.directoryPod(1) != "lldap-1" {
		t.Errorf("with lldap's image: server %q, pod %q", e.directoryServer(), e.directoryPod(1))
	}
	e.Images.LLDAP = ""
	if e.directoryServer() != "slapd" || e.directoryPod(1) != "slapd-1" {
		t.Errorf("without: server %q, pod %q", e.directoryServer(), e.directoryPod(1))
	}
}
