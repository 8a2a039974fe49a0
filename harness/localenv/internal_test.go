package localenv

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fediversity/podroles/internal/pki"
)

func TestProgramMissing(t *testing.T) {
	saved := toolDirs
	toolDirs = nil
	defer func() { toolDirs = saved }()
	t.Setenv("PATH", t.TempDir())
	_, err := Up(context.Background(), Options{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "slapd (Debian: apt-get install slapd)") || !strings.Contains(err.Error(), "postgres (Debian: apt-get install postgresql)") {
		t.Fatalf("err = %v", err)
	}
}

// TestImagesFromEnv: official images by default, pinned; CI's servers'
// image for all; one official image named back in over it; a variable
// set empty runs its server from the servers' image.
func TestImagesFromEnv(t *testing.T) {
	// No record of make images here.
	t.Setenv("PODROLES_CACHE", t.TempDir())
	for _, s := range imageSettings {
		// Restored when the test ends; unset while it runs.
		t.Setenv(imageVariable(s.name), "")
		os.Unsetenv(imageVariable(s.name))
	}
	im := imagesFromEnv(t)
	if im != DefaultImages {
		t.Errorf("no variables: %+v", im)
	}
	for _, ref := range []string{im.Postgres, im.HAProxy, im.Nginx, im.OpenBao, im.Authelia, im.LLDAP} {
		if _, tag, ok := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":"); !ok || tag == "" || tag == "latest" {
			t.Errorf("%s is not pinned by a tag", ref)
		}
	}
	if tl := imageTools(im); tl.vault != "bao" || tl.authelia != "authelia" || tl.haproxy != "haproxy" {
		t.Errorf("official images run their own programs: %+v", tl)
	}
	t.Setenv(EnvImageServers, "localhost/servers:x")
	t.Setenv("PODROLES_IMAGE_OPENBAO", "quay.io/openbao/openbao:2.5.3")
	im = imagesFromEnv(t)
	want := Images{Servers: "localhost/servers:x", OpenBao: "quay.io/openbao/openbao:2.5.3", Node: DefaultImages.Node, Slapd: DefaultImages.Slapd}
	if im != want {
		t.Errorf("servers' image with OpenBao's: %+v, want %+v", im, want)
	}
	if im.imageOf(im.Postgres) != "localhost/servers:x" || im.imageOf(im.OpenBao) != "quay.io/openbao/openbao:2.5.3" {
		t.Errorf("imageOf: %s, %s", im.imageOf(im.Postgres), im.imageOf(im.OpenBao))
	}
	t.Setenv("PODROLES_IMAGE_LLDAP", "registry.example/lldap:v9")
	if im = imagesFromEnv(t); im.LLDAP != "registry.example/lldap:v9" || im.Servers != "localhost/servers:x" {
		t.Errorf("lldap's image over the servers': %+v", im)
	}
	os.Unsetenv(EnvImageServers)
	t.Setenv("PODROLES_IMAGE_LLDAP", "")
	if im = imagesFromEnv(t); im.LLDAP != "" || im.Servers != DefaultImages.Servers || im.Authelia != DefaultImages.Authelia {
		t.Errorf("PODROLES_IMAGE_LLDAP set empty: %+v, want slapd and the other defaults", im)
	}
}

func imagesFromEnv(t *testing.T) Images {
	t.Helper()
	im, err := ImagesFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// TestImagesFromRecord: podroles outside make finds the images that make
// images recorded, servers first, with the variables over them; a record
// that is no JSON is named.
func TestImagesFromRecord(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PODROLES_CACHE", dir)
	for _, s := range imageSettings {
		t.Setenv(imageVariable(s.name), "")
		os.Unsetenv(imageVariable(s.name))
	}
	record := `{"servers": "localhost/podroles-servers:abc", "openbao": "localhost/podroles-openbao:def", "node": "localhost/podroles-node:123", "slapd": "localhost/podroles-slapd:456", "authelia": "", "runner": "localhost/podroles-runner:789"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "images.json"), []byte(record), 0o644); err != nil {
		t.Fatal(err)
	}
	want := Images{Servers: "localhost/podroles-servers:abc", OpenBao: "localhost/podroles-openbao:def", Node: "localhost/podroles-node:123", Slapd: "localhost/podroles-slapd:456", Runner: "localhost/podroles-runner:789"}
	if im := imagesFromEnv(t); im != want {
		t.Errorf("from the record: %+v, want %+v", im, want)
	}
	t.Setenv("PODROLES_IMAGE_OPENBAO", "quay.io/openbao/openbao:2.5.3")
	want.OpenBao = "quay.io/openbao/openbao:2.5.3"
	if im := imagesFromEnv(t); im != want {
		t.Errorf("a variable over the record: %+v, want %+v", im, want)
	}
	os.WriteFile(filepath.Join(dir, "images.json"), []byte("servers=x\n"), 0o644)
	if _, err := ImagesFromEnv(); err == nil || !strings.Contains(err.Error(), "images.json") || !strings.Contains(err.Error(), "run make images again") {
		t.Errorf("a record that is no JSON: %v", err)
	}
}

// TestImagesSet: env up's --image, by name; servers= resets the others
// whatever its place among the flags, lldap= gives the role back to
// slapd, postgres= runs PostgreSQL from the servers' image, and a wrong
// name is named.
func TestImagesSet(t *testing.T) {
	im := DefaultImages
	if err := im.SetAll([]string{"nginx=localhost/nginx:1", "lldap=", "postgres="}); err != nil {
		t.Fatal(err)
	}
	want := DefaultImages
	want.Nginx, want.LLDAP, want.Postgres = "localhost/nginx:1", "", ""
	if im != want || im.imageOf(im.Postgres) != DefaultImages.Servers {
		t.Errorf("got %+v, want %+v", im, want)
	}
	im = DefaultImages
	if err := im.SetAll([]string{"lldap=registry.example/lldap:v9", "servers=localhost/s:1"}); err != nil {
		t.Fatal(err)
	}
	if want := (Images{Servers: "localhost/s:1", LLDAP: "registry.example/lldap:v9", Node: DefaultImages.Node, Slapd: DefaultImages.Slapd}); im != want {
		t.Errorf("lldap= before servers=: %+v, want %+v", im, want)
	}
	for _, bad := range []string{"ldap=x", "nginx", "servers="} {
		// The command names its flag (cli.FlagError): the error names the
		// setting.
		if err := im.Set(bad); err == nil || !strings.HasPrefix(err.Error(), "image ") {
			t.Errorf("%q: %v, want an error naming the image setting", bad, err)
		}
	}
}

// TestHostProgram: a static program runs as it is; a dynamic one through
// the host's loader, mounted with every library it needs (a program that
// is missing is named).
func TestHostProgram(t *testing.T) {
	bin, err := (&site{}).podroles()
	if err != nil {
		t.Fatal(err)
	}
	static, err := newHostProgram(bin)
	if err != nil || !slices.Equal(static.run, []string{bin}) || len(static.binds) != 1 {
		t.Errorf("the static supervisor: %+v, %v", static, err)
	}
	sh, err := newHostProgram("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	if len(sh.run) != 4 || !strings.HasPrefix(sh.run[0], hostLibDir+"/ld-linux") || sh.run[2] != hostLibDir || sh.run[3] != "/bin/sh" {
		t.Errorf("/bin/sh runs as %q", sh.run)
	}
	if !slices.ContainsFunc(sh.binds, func(b string) bool { return strings.HasSuffix(b, ":"+hostLibDir+"/libc.so.6:ro") }) {
		t.Errorf("/bin/sh's mounts lack libc: %q", sh.binds)
	}
	if _, err := newHostProgram(filepath.Join(t.TempDir(), "nope")); err == nil || !strings.Contains(err.Error(), "nope, to run in containers") {
		t.Errorf("a missing program: %v", err)
	}
	if got := runAs([]string{"/bin/sh", "--", "/bin/sh", "-c", "x"}, []hostProgram{sh}); len(got) != 11 || got[4] != "--" {
		t.Errorf("a supervisor and a service, both dynamic: %q", got)
	}
}

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
	s := newSite(Options{Dir: "/env", Node: "directory", Namespace: "directory", Loopback: "127.0.1", Provider: ProviderContainers, Images: DefaultImages})
	s.run = newContainerProvider(s)
	e := &directory{site: s, postgres: &postgres{site: s}}
	secrets := e.secrets()
	dir := filepath.Join(s.Dir, "lldap")
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
		case filepath.Dir(f) == s.podSecretsDir(0):
			if _, ok := secrets[filepath.Base(f)]; !ok {
				t.Errorf("%s is no secret of the role", f)
			}
		case f == filepath.Join(s.Dir, "tls", "server.pem"), f == filepath.Join(dir, "server.key"):
		case f == filepath.Join(dir, "server_key"):
			// LLDAP_KEY_FILE: a path lldap reads as a path (its _FILE
			// rule ignores key_file and cert_file), and writes once.
		default:
			t.Errorf("%s: neither a secret of the pod nor a file env up writes", f)
		}
	}
	if !slices.Contains(files, filepath.Join(s.podSecretsDir(0), "admin-password")) || !slices.Contains(files, filepath.Join(s.podSecretsDir(0), "jwt")) {
		t.Errorf("lldap's admin password and JWT secret are not from the pod's secrets: %v", files)
	}
	for _, f := range lldapEnvFiles {
		if s, ok := secrets[f]; !ok || !s.Restart {
			t.Errorf("%s: an environment file that is no secret with restart: lldap would keep a revoked credential", f)
		}
	}
	if e.standIn() != "" || s.directoryPod(1) != "lldap-1" {
		t.Errorf("with lldap's image: stand-in %q, pod %q", e.standIn(), s.directoryPod(1))
	}
	s.Images.LLDAP = ""
	if e.standIn() != "slapd" || s.directoryPod(1) != "slapd-1" {
		t.Errorf("without: stand-in %q, pod %q", e.standIn(), s.directoryPod(1))
	}
}
