package localenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/fediversity/podroles/harness/servers"
)

// tools are the programs the environment runs, and where slapd's schema
// and modules are.
type tools struct {
	slapd, slapadd, haproxy, initdb, postgres string
	// vault serves the OpenBao API, authelia the authelia role and nginx
	// the portal; "" when not built (make servers) or installed, and the
	// environment then runs without OpenBao and the portal.
	vault, authelia, nginx string
	// ldapSchema holds core.schema and its friends; ldapModules holds
	// back_mdb as a module, or is "" where slapd has it built in.
	ldapSchema, ldapModules string
}

// toolDirs are where the programs are looked for when PATH lacks them:
// Debian keeps slapd and haproxy in /usr/sbin and PostgreSQL's servers in
// a folder per version.
var toolDirs = map[string][]string{
	"slapd": {"/usr/sbin", "/usr/libexec"}, "slapadd": {"/usr/sbin"}, "haproxy": {"/usr/sbin"},
	"initdb": {"/usr/lib/postgresql/*/bin"}, "postgres": {"/usr/lib/postgresql/*/bin"},
}

func findTools() (tools, error) {
	var t tools
	var missing []string
	look := func(dst *string, name, pkg string) {
		if p, err := exec.LookPath(name); err == nil {
			*dst = p
			return
		}
		for _, d := range toolDirs[name] {
			matches, _ := filepath.Glob(filepath.Join(d, name))
			if len(matches) > 0 {
				*dst = matches[len(matches)-1]
				return
			}
		}
		missing = append(missing, fmt.Sprintf("%s (Debian: apt-get install %s)", name, pkg))
	}
	look(&t.slapd, "slapd", "slapd")
	look(&t.slapadd, "slapadd", "slapd")
	look(&t.haproxy, "haproxy", "haproxy")
	look(&t.initdb, "initdb", "postgresql")
	look(&t.postgres, "postgres", "postgresql")
	if len(missing) > 0 {
		return t, fmt.Errorf("env: missing programs: %v", missing)
	}
	// OpenBao's own command (bao, from the dev shell) keeps Vault's
	// flags; CI runs Vault, built by make servers.
	t.vault, t.authelia = servers.Find("vault"), servers.Find("authelia")
	if t.vault == "" {
		t.vault = servers.Find("bao")
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		t.nginx = p
	} else if servers.IsExecutable("/usr/sbin/nginx") {
		t.nginx = "/usr/sbin/nginx"
	}
	if t.vault != "" && (t.authelia == "" || t.nginx == "") {
		return t, fmt.Errorf("env: with vault, the portal needs authelia (make servers) and nginx (Debian: apt-get install nginx)")
	}
	// Debian keeps the schema in /etc/ldap and back_mdb in /usr/lib/ldap;
	// nixpkgs' openldap keeps both beside slapd.
	prefix := filepath.Dir(filepath.Dir(t.slapd))
	for _, d := range []string{"/etc/ldap/schema", "/etc/openldap/schema", filepath.Join(prefix, "etc", "schema"), filepath.Join(prefix, "etc", "openldap", "schema")} {
		if _, err := os.Stat(filepath.Join(d, "core.schema")); err == nil {
			t.ldapSchema = d
			break
		}
	}
	if t.ldapSchema == "" {
		return t, fmt.Errorf("env: slapd's schema (core.schema) is nowhere to be found (Debian: apt-get install slapd)")
	}
	for _, d := range []string{"/usr/lib/ldap", filepath.Join(prefix, "lib", "openldap"), filepath.Join(prefix, "libexec", "openldap")} {
		if _, err := os.Stat(filepath.Join(d, "back_mdb.so")); err == nil {
			t.ldapModules = d
			break
		}
	}
	return t, nil
}

// imageTools are the programs as the containers run them: by name from
// the images' PATH (Debian's and the official images' layouts differ), the
// host's static Vault and Authelia where they run from the servers'
// image, OpenBao's bao and Authelia's own from theirs.
func imageTools(im Images) tools {
	t := tools{
		slapd: "/usr/sbin/slapd", slapadd: "/usr/sbin/slapadd", haproxy: "haproxy", nginx: "nginx",
		ldapSchema: "/etc/ldap/schema", ldapModules: "/usr/lib/ldap",
		vault: "bao", authelia: "authelia",
	}
	if im.OpenBao == "" {
		t.vault = servers.Find("vault")
	}
	if im.Authelia == "" {
		t.authelia = servers.Find("authelia")
	}
	if t.vault == "" || t.authelia == "" {
		t.vault, t.authelia = "", ""
	}
	return t
}
