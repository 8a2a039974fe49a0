package scenarios

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/openbao"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/scenarios/inventory"
)

// The secrets suite: each file that a role's sidecar writes in its pod's
// /run/secrets holds exactly what the spec says for its kind (US1-9, 11,
// 12, 16).
func init() {
	register(&Suite{
		Name: "secrets",
		Doc:  "each file of a pod's /run/secrets holds what its secret's kind says, from OpenBao",
		Scenarios: []*Scenario{{
			Name: "files-hold-their-values",
			Spec: []string{"US1-9", "US1-11", "US1-12", "US1-16"},
			Doc:  "a field is its KV value, base64 decoded, one variable of an environment file with no line end, a template rendered over the response (with its parameters sent)",
			Skip: needsSecrets,
			Steps: []Step{{Name: "check every secret file of every pod", Do: func(ctx context.Context, s *State) error {
				token, err := inventory.ReadSecret(s.Inv.OpenBao.TokenFile)
				if err != nil {
					return poll.Permanent(err)
				}
				bao := openbao.New(s.Inv.OpenBao.Address, token)
				var errs []error
				for _, roleName := range slices.Sorted(maps.Keys(s.Inv.Roles)) {
					role := s.Inv.Roles[roleName]
					for _, file := range slices.Sorted(maps.Keys(role.Secrets)) {
						for _, pod := range role.Pods {
							if err := checkSecretFile(ctx, s, bao, role, pod, file, role.Secrets[file]); err != nil {
								errs = append(errs, fmt.Errorf("role %s, pod %s, secret %s: %w", roleName, pod.Name, file, err))
							}
						}
					}
				}
				return joinErrors(errs)
			}}},
		}, {
			Name: "identity-not-readable",
			Spec: []string{"US1-7"},
			Doc:  "the service of a pod with secrets cannot read the pod's identity: its service-account token is absent or unreadable to others",
			Skip: func(inv *inventory.Inventory) string {
				if why := needsSecrets(inv); why != "" {
					return why
				}
				for _, r := range inv.Roles {
					for _, p := range r.Pods {
						if len(r.Secrets) > 0 && p.RootDir == "" && !inCluster(inv, p) {
							return fmt.Sprintf("pod %s has no rootDir in the inventory, and is no pod of a cluster", p.Name)
						}
					}
				}
				return ""
			},
			Steps: []Step{{Name: "look for each pod's service-account token", Do: identityNotReadable}},
		}},
	})
}

// serviceAccountToken is where Kubernetes mounts a pod's identity.
const serviceAccountToken = "var/run/secrets/kubernetes.io/serviceaccount/token"

func identityNotReadable(ctx context.Context, s *State) error {
	var errs []error
	for _, roleName := range slices.Sorted(maps.Keys(s.Inv.Roles)) {
		role := s.Inv.Roles[roleName]
		if len(role.Secrets) == 0 {
			continue
		}
		for _, pod := range role.Pods {
			if inCluster(s.Inv, pod) {
				errs = append(errs, identityNotReadableInPod(ctx, s, pod))
				continue
			}
			path := filepath.Join(pod.RootDir, serviceAccountToken)
			info, err := os.Stat(path)
			switch {
			case errors.Is(err, os.ErrNotExist):
				s.Note("pod %s has no service-account token", pod.Name)
			case err != nil:
				errs = append(errs, fmt.Errorf("pod %s: %w", pod.Name, err))
			case info.Mode().Perm()&0o044 != 0:
				errs = append(errs, fmt.Errorf("pod %s: %s is readable by others (mode %s): the service could act as the pod", pod.Name, path, info.Mode().Perm()))
			case ownedByService(pod, info):
				errs = append(errs, fmt.Errorf("pod %s: %s belongs to the service's own user: the service could act as the pod", pod.Name, path))
			default:
				s.Note("pod %s has a service-account token that only another user reads", pod.Name)
			}
		}
	}
	return joinErrors(errs)
}

// identityNotReadableInPod tries to read the pod's service-account token
// from each of its containers but the sidecar, through exec: it must not
// be there.
func identityNotReadableInPod(ctx context.Context, s *State, pod inventory.Endpoint) error {
	c, err := stateCluster(s)
	if err != nil {
		return err
	}
	ns := s.Inv.Cluster.Namespace
	got, err := c.Clientset.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return discoverError("Pod", ns, pod.Name, "get", err)
	}
	token := "/" + serviceAccountToken
	var errs []error
	for _, container := range got.Spec.Containers {
		if container.Name == plan.ContainerSidecar {
			continue // the sidecar logs in with it
		}
		out, err := c.Exec(ctx, ns, pod.Name, container.Name, []string{"cat", token})
		switch {
		case err == nil && len(out) > 0:
			errs = append(errs, fmt.Errorf("pod %s: container %s reads the pod's service-account token %s: the service could act as the pod", pod.Name, container.Name, token))
		case err != nil && !strings.Contains(err.Error(), "exited with status"):
			errs = append(errs, err) // exec itself failed: nothing was learnt
		default:
			s.Note("pod %s: container %s cannot read %s", pod.Name, container.Name, token)
		}
	}
	return joinErrors(errs)
}

func needsSecrets(inv *inventory.Inventory) string {
	if inv.OpenBao == nil {
		return "the inventory has no openbao"
	}
	for _, r := range inv.Roles {
		if len(r.Secrets) > 0 {
			return ""
		}
	}
	return "no role of the inventory has secrets"
}

// checkSecretFile waits until the pod's file holds what secret says.
func checkSecretFile(ctx context.Context, s *State, bao *openbao.Client, role *inventory.Role, pod inventory.Endpoint, file string, secret facts.Secret) error {
	if pod.SecretsDir == "" && !inCluster(s.Inv, pod) {
		return poll.Permanent(fmt.Errorf("the inventory gives no secretsDir for the pod"))
	}
	where := secretWhere(s, pod, file)
	var expect string
	switch {
	case secret.Template != nil:
		expect = "the template rendered over the response of " + secret.Path
	case secret.Field != nil:
		expect = describeField(secret)
	default:
		return poll.Permanent(fmt.Errorf("a secret of %s with neither a field nor a template", secret.Path))
	}
	return poll.Eventually(ctx, poll.Probe{Endpoint: where, Expect: expect, Within: s.Patience}, func(ctx context.Context) error {
		got, err := readPodSecret(ctx, s, pod, file)
		if err != nil {
			return err
		}
		if secret.Template != nil {
			return checkRendered(ctx, s, bao, role, pod, got, pod.Name+" "+file, secret)
		}
		want, err := fieldValue(ctx, bao, secret)
		if err != nil {
			return err
		}
		if string(got) != want {
			return poll.Saw("%d bytes that are not %s (%d bytes)", len(got), expect, len(want))
		}
		s.Note("%s %s: %s", pod.Name, file, expect)
		return nil
	})
}

func describeField(s facts.Secret) string {
	d := fmt.Sprintf("field %s of %s", *s.Field, s.Path)
	if s.Encoding != nil {
		d += ", " + *s.Encoding + " decoded"
	}
	if s.Variable != nil {
		d += ", variable " + *s.Variable + " with no line end"
	}
	return d
}

// fieldValue is what the file of a field secret must hold, read from the
// KV entry now.
func fieldValue(ctx context.Context, bao *openbao.Client, s facts.Secret) (string, error) {
	data, err := bao.KV(ctx, s.Path)
	if err != nil {
		return "", err
	}
	v, ok := data[*s.Field].(string)
	if !ok {
		return "", poll.Permanent(fmt.Errorf("%s has no string field %s", s.Path, *s.Field))
	}
	if s.Encoding != nil && *s.Encoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return "", poll.Permanent(fmt.Errorf("field %s of %s is not base64: %w", *s.Field, s.Path, err))
		}
		v = string(b)
	}
	if s.Variable != nil {
		for _, line := range strings.Split(v, "\n") {
			if val, ok := strings.CutPrefix(line, *s.Variable+"="); ok {
				return val, nil
			}
		}
		return "", poll.Permanent(fmt.Errorf("field %s of %s has no variable %s", *s.Field, s.Path, *s.Variable))
	}
	return v, nil
}

var templateAction = regexp.MustCompile(`\{\{-?\s*(.*?)\s*-?\}\}`)

// dataField is an action that prints a field of the response: .Data.x, or
// .Data.data.x of a KV v2 entry (its group is named kv_x).
var dataField = regexp.MustCompile(`^\.Data\.(data\.)?([A-Za-z_][A-Za-z0-9_]*)$`)

// templatePattern turns a template into a pattern that its renderings
// match: text as it is, each {{ .Data.x }} a group named x.
func templatePattern(tmpl string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	last := 0
	seen := map[string]bool{}
	for _, m := range templateAction.FindAllStringSubmatchIndex(tmpl, -1) {
		b.WriteString(regexp.QuoteMeta(tmpl[last:m[0]]))
		action := tmpl[m[2]:m[3]]
		if f := dataField.FindStringSubmatch(action); f != nil && !seen[f[1]+f[2]] {
			seen[f[1]+f[2]] = true
			name := f[2]
			if f[1] != "" {
				name = "kv_" + name
			}
			fmt.Fprintf(&b, `(?P<%s>.+?)`, name)
		} else {
			b.WriteString(`(.*?)`)
		}
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(tmpl[last:]))
	b.WriteString(`$`)
	return regexp.Compile(b.String())
}

// checkRendered checks a rendered template: its text matches the template,
// a credential of the database engine logs in, a certificate of the PKI
// engine is for the name in the parameters and signed by the PKI's CA.
func checkRendered(ctx context.Context, s *State, bao *openbao.Client, role *inventory.Role, pod inventory.Endpoint, got []byte, label string, secret facts.Secret) error {
	values, ok := renderedValues(got, *secret.Template)
	if !ok {
		return poll.Saw("%d bytes that do not render the template", len(got))
	}
	// One credential may be split over several files (a username, a
	// password): the pod's files of the same path hold one read.
	for file, sibling := range role.Secrets {
		if sibling.Path != secret.Path || sibling.Template == nil || len(sibling.Parameters) > 0 {
			continue
		}
		data, err := readPodSecret(ctx, s, pod, file)
		if err != nil {
			return err
		}
		more, ok := renderedValues(data, *sibling.Template)
		if !ok {
			return poll.Saw("%s that does not render its template", file)
		}
		for k, v := range more {
			values[k] = v
		}
	}
	if err := kvValuesMatch(ctx, bao, secret.Path, values); err != nil {
		return err
	}
	if values["username"] != "" && values["password"] != "" && s.Inv.Postgres != nil {
		if err := credentialLogsIn(ctx, s, values["username"], values["password"]); err != nil {
			return err
		}
		s.Note("%s: a credential of %s that logs in to Postgres as %s", label, secret.Path, values["username"])
	}
	if cn, ok := secret.Parameters["common_name"].(string); ok {
		block, _ := pem.Decode(got)
		if block == nil {
			return poll.Saw("no PEM certificate")
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return poll.Saw("a certificate that does not parse: %v", err)
		}
		if cert.Subject.CommonName != cn {
			return poll.Saw("a certificate for %s, not %s: the parameters were not sent", cert.Subject.CommonName, cn)
		}
		ca, err := pkiCA(ctx, bao, secret.Path)
		if err != nil {
			return err
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: ca, DNSName: cn}); err != nil {
			return poll.Saw("a certificate for %s that the PKI's CA does not verify: %v", cn, err)
		}
		s.Note("%s: a certificate of %s for %s, as the parameters ask, signed by the PKI's CA", label, secret.Path, cn)
	}
	return nil
}

// credentialLogsIn logs in to the role's Postgres with a credential.
func credentialLogsIn(ctx context.Context, s *State, user, password string) error {
	u, _, err := dsn(s)
	if err != nil {
		return err
	}
	u.User = url.UserPassword(user, password)
	db, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return poll.Saw("a credential that does not log in to Postgres (%v)", err)
	}
	return db.Close(ctx)
}

// pkiCA returns the CA of the PKI engine mounted at path's first element.
func pkiCA(ctx context.Context, bao *openbao.Client, path string) (*x509.CertPool, error) {
	mount, _, _ := strings.Cut(path, "/")
	var ca struct {
		Data struct {
			Certificate string `json:"certificate"`
		} `json:"data"`
	}
	if err := bao.Do(ctx, "GET", mount+"/cert/ca", nil, &ca); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(ca.Data.Certificate)) {
		return nil, poll.Permanent(fmt.Errorf("%s/cert/ca holds no certificate", mount))
	}
	return pool, nil
}

// renderedValues matches a file against its template and returns the
// values of the response it holds, by field.
func renderedValues(got []byte, template string) (map[string]string, bool) {
	pattern, err := templatePattern(template)
	if err != nil {
		return nil, false
	}
	m := pattern.FindSubmatch(got)
	if m == nil || strings.Contains(string(got), "{{") {
		return nil, false
	}
	values := map[string]string{}
	for i, name := range pattern.SubexpNames() {
		if name != "" {
			values[name] = string(m[i])
		}
	}
	return values, true
}

// kvValuesMatch compares the KV fields a template printed with the entry.
func kvValuesMatch(ctx context.Context, bao *openbao.Client, path string, values map[string]string) error {
	var fields []string
	for k := range values {
		if strings.HasPrefix(k, "kv_") {
			fields = append(fields, k)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	data, err := bao.KV(ctx, path)
	if err != nil {
		return err
	}
	for _, k := range fields {
		field := strings.TrimPrefix(k, "kv_")
		if want, _ := data[field].(string); values[k] != want {
			return poll.Saw("field %s of %s rendered with a value that is not the entry's", field, path)
		}
	}
	return nil
}

// ownedByService reports whether a file belongs to the user the pod's
// service runs as (its process, from the pod's status).
func ownedByService(pod inventory.Endpoint, info os.FileInfo) bool {
	st, err := inventory.ReadPodStatus(pod.StatusFile)
	if err != nil || st.ServicePID == 0 {
		return false
	}
	proc, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", st.ServicePID))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(proc), "\n") {
		if uids, ok := strings.CutPrefix(line, "Uid:"); ok {
			fields := strings.Fields(uids)
			sys, ok := info.Sys().(*syscall.Stat_t)
			return ok && len(fields) > 1 && fields[1] == fmt.Sprint(sys.Uid)
		}
	}
	return false
}
