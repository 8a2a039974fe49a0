package localenv

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/fediversity/podroles/internal/pki"
	"github.com/fediversity/podroles/scenarios/inventory"
)

// makeCertificates issues the certificate of the lldap role's Service:
// from OpenBao's PKI engine, whose CA is then the CA file of the ldap
// contract, or without OpenBao from a CA made in Go.
func (e *Env) makeCertificates(ctx context.Context) error {
	s := e.site
	names := e.CertNames
	if len(names) == 0 {
		short := fmt.Sprintf("%s-lldap", e.Node)
		names = []string{s.serviceName(), short + "." + e.Namespace + ".svc", short + "." + e.Namespace}
	}
	var cert, key []byte
	if e.openbao != nil && len(e.CertNames) == 0 {
		var err error
		if cert, key, err = e.openbao.issue(ctx, "internal", names); err != nil {
			return err
		}
	} else {
		// A name that OpenBao's role refuses (a test's) comes from a CA
		// made in Go, which signs anything.
		ca, err := pki.NewCA("podroles test PKI (" + e.Node + ")")
		if err != nil {
			return err
		}
		if cert, key, err = ca.Issue(names...); err != nil {
			return err
		}
		if s.caPEM == nil {
			s.caPEM = ca.PEM
		}
	}
	for name, data := range map[string][]byte{"ca.pem": s.caPEM, "server.pem": cert} {
		if err := writeFile(filepath.Join(e.Dir, "tls", name), data, 0o644); err != nil {
			return err
		}
	}
	return writeFile(filepath.Join(e.Dir, "tls", "server.key"), key, 0o600)
}

// writeInventory writes what the suites know of the environment: where
// its pods and Services are, with the files of their secrets.
func (e *Env) writeInventory() error {
	s, d := e.site, e.directory
	inv := &inventory.Inventory{
		Node: e.Node,
		Roles: map[string]*inventory.Role{
			"lldap": {
				Server: d.server(),
				Service: &inventory.Endpoint{
					Name: s.serviceName(), Address: s.serviceAddress(), Ports: d.servicePorts(),
				},
			},
		},
		LDAP: &inventory.LDAP{
			Role: "lldap", Host: s.serviceName(), Port: PortLDAPS, PlainPort: PortLDAP, HTTPPort: d.podPorts()["http"],
			CAFile: "tls/ca.pem", BaseDN: baseDN,
			BindDN: "uid=authelia-bind,ou=people," + baseDN, BindPasswordFile: "secrets/bind-password",
			User: "authelia-bind", Group: "lldap_strict_readonly",
		},
		Postgres: &inventory.Postgres{
			Role: "lldap", DSNFile: "secrets/postgres-dsn", Schema: "lldap_provision", UsersTable: "users",
		},
	}
	for i := range replicas {
		pod := inventory.Endpoint{Name: s.podName(i), Address: s.podAddress(i), Ports: d.podPorts()}
		if e.openbao != nil {
			pod.SecretsDir, pod.StatusFile, pod.RootDir = s.podSecretsDir(i), s.podStatusFile(s.podName(i)), s.podRoot(s.podName(i))
		}
		inv.Roles["lldap"].Pods = append(inv.Roles["lldap"].Pods, pod)
	}
	if e.openbao != nil {
		inv.Roles["lldap"].Secrets = d.secrets()
		inv.OpenBao = &inventory.OpenBao{Address: e.openbao.url(), TokenFile: "secrets/openbao-token"}
		// The suite may write these: test values of the environment's own.
		inv.Rotation = &inventory.Rotation{
			Restart:   &inventory.SecretRef{Role: "lldap", File: "key-seed"},
			NoRestart: &inventory.SecretRef{Role: "lldap", File: "jwt"},
		}
		if len(e.CertNames) == 0 {
			e.addPortal(inv)
		}
	}
	e.Inventory = filepath.Join(e.Dir, "inventory.yaml")
	return inv.Write(e.Inventory)
}

// addPortal adds the authelia role and the main pod's portal.
func (e *Env) addPortal(inv *inventory.Inventory) {
	s := e.site
	inv.LDAP.AdminUser, inv.LDAP.AdminPasswordFile = "admin", "secrets/admin-password"
	inv.Roles["authelia"] = &inventory.Role{
		Server:  "authelia",
		Service: &inventory.Endpoint{Name: s.autheliaServiceName(), Address: s.autheliaServiceAddress(), Ports: map[string]int{"https": PortAuthelia}},
		Pods: []inventory.Endpoint{{Name: s.autheliaPodName(), Address: s.autheliaPodAddress(),
			Ports: map[string]int{"https": PortAuthelia}, SecretsDir: s.autheliaSecretsDir(), StatusFile: s.podStatusFile(s.autheliaPodName()),
			RootDir: s.podRoot(s.autheliaPodName())}},
		Secrets: e.authelia.secrets(),
	}
	inv.Portal = &inventory.Portal{
		URL: "https://" + portalHost, Address: net.JoinHostPort(s.portalAddress(), fmt.Sprint(PortPortal)),
		CAFile: "tls/ca.pem", StorageDSNFile: "secrets/authelia-storage-dsn",
	}
}
