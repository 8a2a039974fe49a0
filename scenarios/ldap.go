package scenarios

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-ldap/ldap/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/ldapgroup"
	"github.com/fediversity/podroles/internal/openbao"
	"github.com/fediversity/podroles/internal/pki"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// The ldap suite: a reader of the ldap contract in another pod reaches the
// role's Service by its name over LDAPS, verifies the role's certificate
// with the contract's CA file and binds with the contract's password file
// (US1-15, SC-004). The contract is the node's (fediversity.lldap.*), its
// files are read where a reader opens them: in the main pod.
var ldapSuite = &Suite{
	Name: "ldap",
	Doc:  "a reader of the ldap contract binds to the role's Service and pods over LDAPS, verifying the CA",
	Scenarios: []*Scenario{
		{
			Name:  "service-ldaps-bind",
			Spec:  []string{"SC-004", "US1-15"},
			Doc:   "a reader in the main pod (a probe added to it) reaches the Service by its name over LDAPS, verifies it with the contract's CA, binds with the contract's password file and finds its user",
			Skip:  needsLDAP,
			Uses:  []Capability{capExec, capProbe},
			Steps: Checks(Check{Name: "bind at the Service and find the user", Do: readerFindsAtService}),
		},
		{
			Name:  "plain-port-not-on-service",
			Spec:  []string{"SC-004"},
			Doc:   "the plain LDAP port of the pods is not on the Service",
			Skip:  needsLDAP,
			Uses:  []Capability{capServices},
			Steps: Checks(Check{Name: "the Service refuses the plain LDAP port", Do: plainPortNotOnService}),
		},
		{
			Name: "each-pod-binds",
			Spec: []string{"SC-004", "US1-15"},
			Doc:  "each pod of the role answers the same bind, with a certificate for the Service's name",
			Skip: needsLDAP,
			Uses: []Capability{capExec},
			Steps: Checks(Check{Name: "bind at each pod and find the user", Do: func(ctx context.Context, s *State) error {
				return eachPodFinds(ctx, s)
			}}),
		},
		{
			Name:  "reader-password-from-kv",
			Spec:  []string{"SC-004", "Known Deviations"},
			Doc:   "the reader's password file in the main pod (fediversity.lldap.readerBindPasswordFile) holds the KV entry of the bind password, as the sidecar of the lldap role renders it in bind-password in each of the role's pods: one value, read from OpenBao, in every pod",
			Skip:  needsReaderPassword,
			Uses:  []Capability{capExec},
			Steps: Checks(Check{Name: "compare the main pod's file with the KV entry and the role's copies", Do: readerPasswordFromKV}),
		},
		{
			Name:  "roles-published",
			Spec:  []string{"SC-004", "US2-11"},
			Doc:   "the KV entry that the main pod's lldap-publish-roles writes (the inventory's ldap.publishedRoles) holds the members of the role group ldap.group, as the directory answers the contract's reader at the role's Service: no member missing, none that left",
			Skip:  needsPublishedRoles,
			Uses:  []Capability{capExec},
			Steps: Checks(Check{Name: "compare the published members with the directory's", Do: rolesPublished}),
		},
		{
			Name:      "wrong-ca-refused",
			Spec:      []string{"US1-15"},
			Doc:       "the runner's own TLS client refuses the role's certificate with a CA that did not sign it: proves that the other ldap scenarios verify, not that the deployment does anything",
			SelfCheck: true,
			Skip:      needsLDAP,
			Uses:      usesNothing,
			Steps: Checks(Check{Name: "a handshake with another CA fails", Do: func(ctx context.Context, s *State) error {
				other, err := otherCA()
				if err != nil {
					return err
				}
				return refusedHandshake(ctx, s, &tls.Config{RootCAs: other, ServerName: s.Inv.LDAP.Host}, "certificate signed by unknown authority")
			}}),
		},
		{
			Name:      "wrong-name-refused",
			Spec:      []string{"US1-15"},
			Doc:       "the runner's own TLS client refuses the role's certificate for a name that is not the Service's: proves that the other ldap scenarios check the name, and that the certificate is not valid for any name",
			SelfCheck: true,
			Skip:      needsLDAP,
			Uses:      []Capability{capExec},
			Steps: Checks(Check{Name: "a handshake for another name fails", Do: func(ctx context.Context, s *State) error {
				pool, err := contractCA(ctx, s)
				if err != nil {
					return err
				}
				return refusedHandshake(ctx, s, &tls.Config{RootCAs: pool, ServerName: "not-the-service.invalid"}, "not not-the-service.invalid")
			}}),
		},
	},
}

func needsLDAP(w world.World) string {
	inv := w.Inventory()
	if inv.LDAP == nil {
		return "the inventory has no ldap contract"
	}
	return needsMainPod(w)
}

// roleBindPasswordSecret is the secret of the lldap role that holds the
// reader's bind password: the file of lldap's bindPasswordFile in the
// role's pods, which the node surface does not name.
const roleBindPasswordSecret = "bind-password"

// needsReaderPassword says why the reader's password file cannot be
// compared with its KV entry.
func needsReaderPassword(w world.World) string {
	if why := needsReaderAndOpenBao(w); why != "" {
		return why
	}
	inv := w.Inventory()
	l := inv.LDAP
	r := inv.Roles[l.Role]
	if r == nil {
		return "the inventory has no role " + l.Role
	}
	secret, ok := r.Secrets[roleBindPasswordSecret]
	switch {
	case !ok:
		return fmt.Sprintf("role %s has no secret %s: the KV entry of the reader's password is not known", l.Role, roleBindPasswordSecret)
	case secret.Field == nil:
		return fmt.Sprintf("secret %s of role %s is a template, not a KV entry's field", roleBindPasswordSecret, l.Role)
	}
	for _, p := range r.Pods {
		if why := w.Lacks(p, world.NeedsStatusAndSecrets); why != "" {
			return why
		}
	}
	return ""
}

// needsPublishedRoles says why the published roles cannot be compared
// with the directory.
func needsPublishedRoles(w world.World) string {
	inv := w.Inventory()
	if inv.Facts != nil && !hasUnit(inv.Facts, publishRolesUnit) {
		return "node " + inv.Node + " has no unit " + publishRolesUnit + " that it enables"
	}
	if why := needsReaderAndOpenBao(w); why != "" {
		return why
	}
	switch l := inv.LDAP; {
	case l.PublishedRoles == "":
		return "the inventory's ldap names no publishedRoles: where " + publishRolesUnit + " writes, the spec does not say"
	case l.Group == "":
		return "the inventory's ldap names no group: which group " + publishRolesUnit + " publishes, the spec does not say"
	case inv.Roles[l.Role] == nil || inv.Roles[l.Role].Service == nil:
		return "the inventory has no Service of role " + l.Role
	}
	return ""
}

// needsReaderAndOpenBao says why the contract's reader, with its
// password file, cannot be compared with what OpenBao holds.
func needsReaderAndOpenBao(w world.World) string {
	if why := needsLDAP(w); why != "" {
		return why
	}
	switch inv := w.Inventory(); {
	case inv.OpenBao == nil:
		return "the inventory has no openbao"
	case inv.LDAP.BindPasswordFile == "":
		return "the ldap contract gives a reader no password file (fediversity.lldap.readerBindPasswordFile)"
	}
	return ""
}

// publishRolesUnit is the main pod's unit that publishes the members of
// a role group to OpenBao (US2-11).
const publishRolesUnit = "lldap-publish-roles"

// rolesPublished compares the published members with the group's, as the
// directory answers the contract's reader at the role's Service: what a
// consumer of the entry trusts is the directory's word.
func rolesPublished(ctx context.Context, s *State) error {
	l := s.Inv.LDAP
	bao, err := baoClient(s)
	if err != nil {
		return err
	}
	ca, err := contractCAPEM(ctx, s)
	if err != nil {
		return err
	}
	addr, err := world.Addr(*s.Inv.Roles[l.Role].Service, l.Port)
	if err != nil {
		return err
	}
	probe := poll.Probe{Endpoint: fmt.Sprintf("field %s of KV entry %s", l.Group, l.PublishedRoles), Expect: "the members of group " + l.Group + " as the directory lists them", Within: s.Patience}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		bind, err := contractBind(ctx, s, addr, ca)
		if err != nil {
			return err
		}
		members, err := bind.groupMembers(ctx)
		if err != nil {
			return err
		}
		entry, err := bao.KV(ctx, l.PublishedRoles)
		var refused *openbao.Error
		if errors.As(err, &refused) && refused.Status == http.StatusNotFound {
			return poll.Saw("no entry: nothing published")
		}
		if err != nil {
			return err
		}
		held, ok := entry[l.Group].(string)
		if !ok {
			return poll.Saw("no field %s (fields %s)", l.Group, strings.Join(slices.Sorted(maps.Keys(entry)), ", "))
		}
		published := ldapgroup.ParseList(held)
		missing, left := without(members, published), without(published, members)
		if len(missing)+len(left) > 0 {
			var differ []string
			if len(missing) > 0 {
				differ = append(differ, "lacks "+strings.Join(missing, ", ")+", in the group")
			}
			if len(left) > 0 {
				differ = append(differ, "holds "+strings.Join(left, ", ")+", not in the group")
			}
			return poll.Saw("%q, which %s", held, strings.Join(differ, " and "))
		}
		s.Note("%s holds the %d members of group %s that the directory lists at %s: %s", l.PublishedRoles, len(members), l.Group, addr, held)
		return nil
	})
}

// hasUnit says the node has unit (systemd.services.<unit>) and enables
// it: a unit switched off runs in no pod.
func hasUnit(n *facts.Node, unit string) bool {
	u, ok := n.Units[unit]
	return ok && u.Enable
}

// without is what of a is not in b.
func without(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// readerPasswordFromKV compares the reader's password file in the main
// pod, which the main pod's own agent renders, with the KV entry of the
// bind password and with the role's copies of it: a drift between them
// breaks every reader at the first rotation. The file is compared as the
// reader binds with it, less a final line end.
func readerPasswordFromKV(ctx context.Context, s *State) error {
	bao, err := baoClient(s)
	if err != nil {
		return err
	}
	secret := readerPassword(s.Inv)
	return readerCopiesHold(ctx, s, s.Patience, describeField(secret), func(ctx context.Context) (string, error) {
		return fieldValue(ctx, bao, secret)
	})
}

// readerPassword is the lldap role's secret that holds the reader's
// password.
func readerPassword(inv *inventory.Inventory) facts.Secret {
	return inv.Roles[inv.LDAP.Role].Secrets[roleBindPasswordSecret]
}

// readerCopiesHold waits within patience until the main pod's reader's
// password file and the lldap role's copies each hold what want reads;
// what names that value in the failure.
func readerCopiesHold(ctx context.Context, s *State, within time.Duration, what string, want func(context.Context) (string, error)) error {
	l := s.Inv.LDAP
	role := s.Inv.Roles[l.Role]
	probe := poll.Probe{Endpoint: fmt.Sprintf("the main pod's %s and %s in the pods of role %s", l.BindPasswordFile, roleBindPasswordSecret, l.Role), Expect: "each to hold " + what, Within: within}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		want, err := want(ctx)
		if err != nil {
			return err
		}
		main, err := nodeSecret(ctx, s, l.BindPasswordFile)
		if err != nil {
			return err
		}
		var differ []string
		if main != want {
			differ = append(differ, fmt.Sprintf("the main pod's %s (%d bytes)", l.BindPasswordFile, len(main)))
		}
		for _, pod := range role.Pods {
			held, err := readPodSecret(ctx, s, pod, roleBindPasswordSecret)
			if err != nil {
				return err
			}
			if string(held) != want {
				differ = append(differ, fmt.Sprintf("%s in pod %s (%d bytes)", roleBindPasswordSecret, pod.Name, len(held)))
			}
		}
		if len(differ) > 0 {
			return poll.Saw("%s not %s (%d bytes)", strings.Join(differ, ", "), what, len(want))
		}
		s.Note("the main pod's %s holds %s, as %s does in the %d pods of role %s", l.BindPasswordFile, what, roleBindPasswordSecret, len(role.Pods), l.Role)
		return nil
	})
}

// eachPodFinds binds as the contract's reader at each pod of the role
// that serves LDAP, and names each pod that fails.
func eachPodFinds(ctx context.Context, s *State) error {
	pods, err := podsOf(s.Inv, s.Inv.LDAP.Role)
	if err != nil {
		return err
	}
	ca, err := contractCAPEM(ctx, s)
	if err != nil {
		return err
	}
	var errs []error
	for _, pod := range pods {
		if err := readerFindsWith(ctx, s, ca, pod); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", pod.Name, err))
		}
	}
	return joinErrors(errs)
}

// readerFinds binds as the contract's reader at endpoint, from the
// runner, over LDAPS with the Service's name as TLS server name, and finds
// the contract's user (and group, if the inventory names one).
func readerFinds(ctx context.Context, s *State, at inventory.Endpoint) error {
	// The main pod first: its files are the contract's.
	ca, err := contractCAPEM(ctx, s)
	if err != nil {
		return err
	}
	return readerFindsWith(ctx, s, ca, at)
}

// readerFindsWith is readerFinds with the contract's CA already read.
func readerFindsWith(ctx context.Context, s *State, ca []byte, at inventory.Endpoint) error {
	l := s.Inv.LDAP
	addr, err := world.Addr(at, l.Port)
	if err != nil {
		return err
	}
	where := fmt.Sprintf("ldaps://%s (%s, TLS name %s)", addr, at.Name, l.Host)
	return readerBinds(ctx, s, ca, addr, where, at.Name, (*readerBind).do)
}

// readerBinds waits for the contract's reader to bind at addr, verifying
// with ca, and find its user, each try by do; the note says from where.
func readerBinds(ctx context.Context, s *State, ca []byte, addr, where, from string, do func(*readerBind, context.Context) (string, error)) error {
	l := s.Inv.LDAP
	probe := poll.Probe{
		Endpoint: where,
		Expect:   fmt.Sprintf("a verified bind as %s that finds the user %s", l.BindDN, l.User),
		Within:   s.Patience,
	}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		bind, err := contractBind(ctx, s, addr, ca)
		if err != nil {
			return err
		}
		found, err := do(bind, ctx)
		if err != nil {
			return err
		}
		s.Note("%s: %s", from, found)
		return nil
	})
}

// contractBind is the bind of the contract's reader at addr. The password
// is read at each try: a rotation may rewrite the file meanwhile.
func contractBind(ctx context.Context, s *State, addr string, ca []byte) (*readerBind, error) {
	l := s.Inv.LDAP
	password, err := nodeSecret(ctx, s, l.BindPasswordFile)
	if err != nil {
		return nil, err
	}
	return &readerBind{Addr: addr, ServerName: l.Host, CA: ca, BindDN: l.BindDN, Password: password,
		PasswordFile: l.BindPasswordFile, BaseDN: l.BaseDN, User: l.User, Group: l.Group}, nil
}

// readerBind is what a reader of the ldap contract does, wherever it
// runs (the runner, or a probe in the main pod): a verified LDAPS bind,
// and a search for the contract's user and group.
type readerBind struct {
	Addr       string `json:"addr"`
	ServerName string `json:"serverName"`
	// CA is the contract's CA file, PEM.
	CA           []byte `json:"ca"`
	BindDN       string `json:"bindDN"`
	Password     string `json:"password"`
	PasswordFile string `json:"passwordFile"`
	BaseDN       string `json:"baseDN"`
	User         string `json:"user"`
	Group        string `json:"group,omitempty"`
}

// do binds and searches, and says what it found. A request the server
// did not answer in time is no answer (poll.NoAnswer), retried within
// the scenario's deadline: a loaded machine answers late.
func (b *readerBind) do(ctx context.Context) (string, error) {
	found, err := b.bindAndSearch(ctx)
	if ldap.IsErrorWithCode(err, ldap.ErrorNetwork) && strings.Contains(err.Error(), "timed out") {
		return "", poll.NoAnswer(err)
	}
	return found, err
}

// bound is a verified LDAPS connection at b.Addr, bound as the reader.
func (b *readerBind) bound(ctx context.Context) (*ldap.Conn, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b.CA) {
		return nil, poll.Permanent(fmt.Errorf("the contract's CA holds no PEM certificate"))
	}
	conn, err := dialLDAPS(ctx, b.Addr, &tls.Config{RootCAs: pool, ServerName: b.ServerName})
	if err != nil {
		return nil, err
	}
	if err := conn.Bind(b.BindDN, b.Password); err != nil {
		conn.Close()
		if ldap.IsErrorWithCode(err, ldap.LDAPResultInvalidCredentials) {
			return nil, fmt.Errorf("the bind with the password of the contract's %s was refused: %w", b.PasswordFile, err)
		}
		return nil, err
	}
	return conn, nil
}

// groupMembers are the user names of the members of b.Group, as the
// directory answers the reader.
func (b *readerBind) groupMembers(ctx context.Context) ([]string, error) {
	conn, err := b.bound(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	members, err := ldapgroup.Members(conn, b.BaseDN, b.Group)
	var count *ldapgroup.CountError
	if errors.As(err, &count) {
		return nil, poll.Saw("%s", count)
	}
	return ldapgroup.UIDs(members), err
}

func (b *readerBind) bindAndSearch(ctx context.Context) (string, error) {
	conn, err := b.bound(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	found, err := conn.Search(ldap.NewSearchRequest(b.BaseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 2, 10, false,
		fmt.Sprintf("(uid=%s)", ldap.EscapeFilter(b.User)), []string{"uid"}, nil))
	if err != nil {
		return "", err
	}
	if len(found.Entries) != 1 {
		return "", poll.Saw("%d entries with uid=%s under %s", len(found.Entries), b.User, b.BaseDN)
	}
	if b.Group == "" {
		return fmt.Sprintf("bound as %s and found %s", b.BindDN, found.Entries[0].DN), nil
	}
	members, err := ldapgroup.Members(conn, b.BaseDN, b.Group)
	var count *ldapgroup.CountError
	switch {
	case errors.As(err, &count):
		return "", poll.Saw("%s", count)
	case err != nil:
		return "", err
	}
	if len(members) == 0 {
		return "", poll.Saw("group %s with no members", b.Group)
	}
	return fmt.Sprintf("bound as %s, found %s and group %s with %d members", b.BindDN, found.Entries[0].DN, b.Group, len(members)), nil
}

// ldapRequestTimeout bounds an LDAP request where the caller's context
// has no deadline.
const ldapRequestTimeout = time.Minute

// dialLDAPS opens an LDAPS connection; a certificate that fails
// verification is a poll.Permanent error, since waiting does not mend it.
func dialLDAPS(ctx context.Context, addr string, cfg *tls.Config) (*ldap.Conn, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: cfg}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if isVerifyError(err) {
			return nil, poll.Permanent(err)
		}
		return nil, err
	}
	conn := ldap.NewConn(raw, true)
	// Each request may take what the try may: go-ldap takes no context.
	timeout := ldapRequestTimeout
	if deadline, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(deadline), time.Second)
	}
	conn.SetTimeout(timeout)
	conn.Start()
	return conn, nil
}

func isVerifyError(err error) bool {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) || errors.As(err, &verify)
}

// refusedHandshake expects the TLS handshake with the Service to fail
// verification with an error that contains want.
func refusedHandshake(ctx context.Context, s *State, cfg *tls.Config, want string) error {
	svc := s.Inv.Roles[s.Inv.LDAP.Role].Service
	addr, err := world.Addr(*svc, s.Inv.LDAP.Port)
	if err != nil {
		return err
	}
	probe := poll.Probe{Endpoint: "ldaps://" + addr + " (" + svc.Name + ")", Expect: "the handshake to fail verification: " + want, Within: s.Patience}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: cfg}
		conn, err := d.DialContext(ctx, "tcp", addr)
		switch {
		case err == nil:
			conn.Close()
			return poll.Permanent(fmt.Errorf("the handshake succeeded: the client does not verify what it should, or the role's certificate is not what the contract says"))
		case isVerifyError(err) && strings.Contains(err.Error(), want):
			s.Note("refused as it must be: %v", err)
			return nil
		case isVerifyError(err):
			return poll.Permanent(fmt.Errorf("refused, but not for the expected reason: %w", err))
		}
		return err // the Service is not answering yet
	})
}

// lldapPlainPorts are the plain LDAP ports a role's pods may serve
// unless the node says otherwise: lldap's default (3890) and LDAP's own
// (389). The node states lldap's port in its image's LLDAP_LDAP_PORT,
// which the inventory's plainPort is reconciled with.
var lldapPlainPorts = []int{389, 3890}

// plainPorts are the plain LDAP ports that must not be on the Service:
// the defaults and the node's (the inventory's plainPort), less the
// contract's LDAPS port.
func plainPorts(l *inventory.LDAP) []int {
	ports := slices.Clone(lldapPlainPorts)
	if l.PlainPort != 0 {
		ports = append(ports, l.PlainPort)
	}
	slices.Sort(ports)
	ports = slices.Compact(ports)
	return slices.DeleteFunc(ports, func(p int) bool { return p == l.Port })
}

// plainPortNotOnService checks that the Service neither declares, nor
// sends to, nor answers on the pods' plain LDAP ports.
func plainPortNotOnService(ctx context.Context, s *State) error {
	svc := s.Inv.Roles[s.Inv.LDAP.Role].Service
	plain := plainPorts(s.Inv.LDAP)
	for name, port := range svc.Ports {
		if slices.Contains(plain, port) {
			return fmt.Errorf("the Service %s has the plain LDAP port %d (as %q): only LDAPS may be on it", svc.Name, port, name)
		}
	}
	if c := s.World.Cluster(); c != nil {
		// The endpoint is named by its DNS name; the object by its first
		// label.
		object, _, _ := strings.Cut(svc.Name, ".")
		if err := targetPortsNotPlain(ctx, s, c, object, plain); err != nil {
			return err
		}
	}
	if svc.Forwarded != nil {
		// Through port-forwarding only the Service's declared ports are
		// reachable: the declaration is what can be checked.
		s.Note("the Service %s declares no plain LDAP port (%s) and sends none to its pods (its ports are reached through port-forwarding)", svc.Name, portList(plain))
		return nil
	}
	// A Service that answers nothing would refuse the plain port too:
	// first the LDAPS port must answer.
	ldaps, err := world.Addr(*svc, s.Inv.LDAP.Port)
	if err != nil {
		return err
	}
	if err := poll.Eventually(ctx, poll.Probe{Endpoint: ldaps, Expect: "the Service to answer on its LDAPS port", Within: s.Patience}, func(ctx context.Context) error {
		c, err := s.World.Dial(ctx, *svc, s.Inv.LDAP.Port)
		if err != nil {
			return err
		}
		return c.Close()
	}); err != nil {
		return err
	}
	for _, port := range plain {
		addr, _ := world.Addr(*svc, port)
		conn, err := s.World.Dial(ctx, *svc, port)
		if err == nil {
			conn.Close()
			return fmt.Errorf("the Service %s answers at %s, a plain LDAP port: only LDAPS may be on it", svc.Name, addr)
		}
		s.Note("%s refuses the plain LDAP port: %v", addr, err)
	}
	return nil
}

// targetPortsNotPlain checks the Service's target ports in the cluster:
// a port of another number may still send to the pods' plain port.
func targetPortsNotPlain(ctx context.Context, s *State, c *world.Cluster, name string, plain []int) error {
	ns := c.Namespace
	svc, err := c.Clientset.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return world.ObjectError("Service", ns, name, "get", err)
	}
	for _, p := range svc.Spec.Ports {
		target := p.TargetPort.IntValue()
		if p.TargetPort.Type == intstr.String {
			// A named target port is the pods' container port of that
			// name. A pod without one gets none of this port's traffic.
			var ok bool
			if target, ok = namedPort(s, p.TargetPort.StrVal); !ok {
				continue
			}
		}
		if target == 0 {
			target = int(p.Port) // no target port: the port's own number
		}
		if slices.Contains(plain, target) {
			return fmt.Errorf("the Service %s sends its port %d (%q) to the pods' plain LDAP port %d: only LDAPS may be on it", name, p.Port, p.Name, target)
		}
	}
	return nil
}

// namedPort is the number of the container port named name in the
// ldap role's pods, as the discovery found their ports; false when none
// names one.
func namedPort(s *State, name string) (int, bool) {
	for _, e := range s.Inv.Roles[s.Inv.LDAP.Role].Pods {
		if port, ok := e.Ports[name]; ok {
			return port, true
		}
	}
	return 0, false
}

// portList is ports for a sentence: "389, 3890".
func portList(ports []int) string {
	words := make([]string, len(ports))
	for i, p := range ports {
		words[i] = strconv.Itoa(p)
	}
	return strings.Join(words, ", ")
}

// contractCA is the CA of the ldap contract, from its file in the main
// pod.
func contractCA(ctx context.Context, s *State) (*x509.CertPool, error) {
	return nodeCA(ctx, s, s.Inv.LDAP.CAFile, "fediversity.lldap.tls.caFile")
}

// contractCAPEM is the CA file of the ldap contract as the main pod holds
// it, checked to hold a certificate.
func contractCAPEM(ctx context.Context, s *State) ([]byte, error) {
	return nodeCAPEM(ctx, s, s.Inv.LDAP.CAFile, "fediversity.lldap.tls.caFile")
}

// nodeCA reads a CA file of the node's (option names it) in the main pod.
func nodeCA(ctx context.Context, s *State, path, option string) (*x509.CertPool, error) {
	data, err := nodeCAPEM(ctx, s, path, option)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(data)
	return pool, nil
}

// nodeCAPEM reads a CA file of the node's in the main pod, as PEM.
func nodeCAPEM(ctx context.Context, s *State, path, option string) ([]byte, error) {
	data, err := nodeFile(ctx, s, path)
	if err != nil {
		return nil, fmt.Errorf("the node's %s: %w", option, err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		return nil, poll.Permanent(fmt.Errorf("the node's %s, %s in the main pod, holds no PEM certificate", option, path))
	}
	return data, nil
}

// caPool reads a CA file of the inventory's (the runner's own files).
func caPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, poll.Permanent(fmt.Errorf("CA file: %w", err))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, poll.Permanent(fmt.Errorf("CA file %s holds no PEM certificate", path))
	}
	return pool, nil
}

// otherCA is a pool with a CA that signed nothing of the role's.
func otherCA() (*x509.CertPool, error) {
	ca, err := pki.NewCA("a CA that signed nothing of the role's")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool, nil
}
