package localenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/pki"
	"github.com/fediversity/podroles/inventory"
)

// Where the environment's node keeps its own files, in its main pod: the
// ldap contract's CA and reader's password (fediversity.lldap.*), and the
// CA that its portal verifies authelia with (fediversity.authelia.caFile).
// The main pod's rootDir holds them at these paths.
const (
	lldapCAFile            = "/etc/ssl/lldap-ca.pem"
	autheliaCAFile         = "/etc/ssl/openbao-internal-ca.pem"
	readerBindPasswordFile = "/var/lib/lldap-reader/bind-password"
)

// makeCertificates issues the certificate of the lldap role's Service:
// from OpenBao's PKI engine, whose CA is then the CA file of the ldap
// contract, or without OpenBao (or for names or dates OpenBao's role
// refuses, a test's) from a CA made in Go, which the contract's CA file
// then holds. The main pod gets the node's files: the contract's CA and
// the reader's password, authelia's CA.
func (e *Env) makeCertificates(ctx context.Context) error {
	s := e.site
	names := e.Faults.CertNames
	if len(names) == 0 {
		short := fmt.Sprintf("%s-lldap", e.Node)
		names = []string{s.serviceName(), short + "." + e.Namespace + ".svc", short + "." + e.Namespace}
	}
	var cert, key []byte
	contractCA := s.caPEM
	if e.openbao != nil && !e.ownCA() {
		var err error
		if cert, key, err = e.openbao.issue(ctx, "internal", names); err != nil {
			return err
		}
	} else {
		ca, err := pki.NewCA("podroles test PKI (" + e.Node + ")")
		if err != nil {
			return err
		}
		issue := ca.Issue
		if e.Faults.ExpiredCertificate {
			issue = ca.IssueExpired
		}
		if cert, key, err = issue(names...); err != nil {
			return err
		}
		if s.caPEM == nil {
			s.caPEM = ca.PEM
		}
		contractCA = ca.PEM
	}
	for name, data := range map[string][]byte{"ca.pem": s.caPEM, "server.pem": cert} {
		if err := writeFile(filepath.Join(e.Dir, "tls", name), data, 0o644); err != nil {
			return err
		}
	}
	if err := writeFile(filepath.Join(e.Dir, "tls", "server.key"), key, 0o600); err != nil {
		return err
	}
	main := s.podRoot(s.mainPodName())
	for file, data := range map[string][]byte{lldapCAFile: contractCA, autheliaCAFile: s.caPEM, readerBindPasswordFile: []byte(s.secrets.bind)} {
		path := filepath.Join(main, file)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := writeFile(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// ownCA says the lldap role's certificate comes from a CA made in Go: for
// names or dates that OpenBao's role would refuse, a test's.
func (e *Env) ownCA() bool { return len(e.Faults.CertNames) > 0 || e.Faults.ExpiredCertificate }

// localNode is what the environment's node states, as podroles facts would
// print it: its roles with their secrets (as the environment's servers
// and sidecars serve them), the ldap contract and authelia's host and CA.
// The inventory takes these from it; nothing else of the environment
// reaches the suites.
func (e *Env) localNode() *facts.Node {
	s := e.site
	str := func(v string) *string { return &v }
	replicasOf := func(n int) *int { return &n }
	services := []string{"lldap"}
	lldapPorts := []facts.Port{{Port: PortLDAPS, Protocol: facts.ProtocolTCP}}
	if s.servesLLDAP() {
		lldapPorts = append(lldapPorts, facts.Port{Port: PortLLDAPHTTP, Protocol: facts.ProtocolTCP})
	}
	n := &facts.Node{
		Name:   e.Node,
		Source: "podroles env up",
		Units:  map[string]facts.Unit{"nginx": {Enable: true}, "lldap": {Enable: false}},
		PodRoles: facts.PodRoles{
			Roles: map[string]facts.Role{
				"lldap": {Replicas: replicasOf(replicas), Service: str("lldap"), Ports: lldapPorts, Units: []string{}},
			},
			MainUnits: []string{"nginx"}, SharedUnits: []string{},
			Services: map[string]facts.Service{},
		},
		K8sPod: facts.K8sPod{Enable: true, PlatformUnits: []string{}},
		LLDAP: facts.LLDAP{
			Host: s.serviceName(), ReaderBindPasswordFile: str(readerBindPasswordFile),
			TLS: facts.TLS{Enable: true, CAFile: str(lldapCAFile)},
		},
		Authelia: facts.Authelia{Host: s.autheliaServiceName(), CAFile: str(autheliaCAFile), Storage: facts.AutheliaStorage{Postgres: true}, SMTP: true},
	}
	if e.openbao != nil {
		lldap := n.PodRoles.Roles["lldap"]
		lldap.Secrets = e.directory.secrets()
		n.PodRoles.Roles["lldap"] = lldap
		n.PodRoles.Roles[workerRole] = workerRoleFacts()
		services = append(services, workerRole)
		if e.portal != nil && !e.ownCA() {
			n.PodRoles.Roles["authelia"] = facts.Role{Replicas: replicasOf(1), Service: str("authelia"),
				Ports: []facts.Port{{Port: PortAuthelia, Protocol: facts.ProtocolTCP}}, Secrets: e.authelia.secrets(), Units: []string{}}
			services = append(services, "authelia")
		}
	}
	for _, svc := range services {
		addModularService(n, svc)
	}
	return n
}

// writeFacts writes the node's facts, as podroles facts would.
func (e *Env) writeFacts(path string) error {
	data, err := facts.Marshal(&facts.Document{Version: facts.FactsVersion, Nodes: []*facts.Node{e.localNode()}})
	if err != nil {
		return err
	}
	return writeFile(path, append(data, '\n'), 0o644)
}

// writeInventory writes what the suites know of the environment and its
// node cannot tell: where its pods and Services are, with the files of
// their secrets, and the node's facts, which the suites take the rest
// from.
func (e *Env) writeInventory() error {
	s, d := e.site, e.directory
	if err := e.writeFacts(filepath.Join(e.Dir, "facts.json")); err != nil {
		return err
	}
	inv := &inventory.Inventory{
		Node:      e.Node,
		FactsFile: "facts.json",
		Roles: map[string]*inventory.Role{
			"lldap": {
				StandIn: d.standIn(),
				Service: &inventory.Endpoint{
					Name: s.serviceName(), Address: s.serviceAddress(), Ports: d.servicePorts(),
				},
			},
			// The main pod, which holds the node's own files.
			inventory.MainRole: {Pods: []inventory.Endpoint{{
				Name: s.mainPodName(), Address: s.portalAddress(), RootDir: s.podRoot(s.mainPodName()),
			}}},
		},
		LDAP: &inventory.LDAP{
			Port: PortLDAPS, PlainPort: PortLDAP, HTTPPort: d.podPorts()["http"], BaseDN: baseDN,
			BindDN: "uid=authelia-bind,ou=people," + baseDN, User: "authelia-bind", Group: "lldap_strict_readonly",
		},
		Postgres: &inventory.Postgres{
			Role: "lldap", Schema: "lldap_provision", UsersTable: "users",
		},
	}
	for i := range replicas {
		inv.Roles["lldap"].Pods = append(inv.Roles["lldap"].Pods, e.podEndpoint(s.podName(i), s.podAddress(i), d.podPorts()))
	}
	if e.openbao != nil {
		inv.OpenBao = &inventory.OpenBao{Address: e.openbao.url(), TokenFile: "secrets/openbao-token", RenderInterval: RenderInterval.String()}
		// The suite may write these: test values of the environment's own.
		inv.Rotation = &inventory.Rotation{
			Restart:   &inventory.SecretRef{Role: "lldap", File: "key-seed"},
			NoRestart: &inventory.SecretRef{Role: "lldap", File: "jwt"},
		}
		inv.Roles[workerRole] = &inventory.Role{Pods: []inventory.Endpoint{e.podEndpoint(s.workerPodName(), s.workerAddress(), nil)}}
		if e.portal != nil && !e.ownCA() {
			e.addPortal(inv)
		}
	}
	e.Inventory = filepath.Join(e.Dir, "inventory.yaml")
	return inv.Write(e.Inventory)
}

// podEndpoint is a pod of a role, with its files where it has secrets.
func (e *Env) podEndpoint(name, address string, ports map[string]int) inventory.Endpoint {
	s := e.site
	pod := inventory.Endpoint{Name: name, Address: address, Ports: ports}
	if e.openbao != nil {
		pod.SecretsDir, pod.StatusFile, pod.RootDir = s.podSecrets(name), s.podStatusFile(name), s.podRoot(name)
		pod.SidecarStatusFile, pod.SidecarRestartFile = s.sidecarStatusFile(name), s.sidecarRestartFile(name)
	}
	return pod
}

// addPortal adds the authelia role and the main pod's portal.
func (e *Env) addPortal(inv *inventory.Inventory) {
	s := e.site
	inv.LDAP.AdminUser, inv.LDAP.AdminPasswordFile = "admin", "secrets/admin-password"
	inv.Roles["authelia"] = &inventory.Role{
		Service: &inventory.Endpoint{Name: s.autheliaServiceName(), Address: s.autheliaServiceAddress(), Ports: map[string]int{"https": PortAuthelia}},
		Pods:    []inventory.Endpoint{e.podEndpoint(s.autheliaPodName(), s.autheliaPodAddress(), map[string]int{"https": PortAuthelia})},
	}
	inv.Portal = &inventory.Portal{
		URL: "https://" + portalHost, Address: net.JoinHostPort(s.portalAddress(), fmt.Sprint(PortPortal)),
		CAFile: "tls/ca.pem", StorageDSNFile: "secrets/authelia-storage-dsn",
	}
}
