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
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/openbao"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// The secrets suite: each file that a role's sidecar writes in its pod's
// /run/secrets holds exactly what the spec says for its kind (US1-9, 11,
// 12, 16); the service started after its files existed, and cannot read
// the pod's identity (US1-7).
var secretsSuite = &Suite{
	Name: "secrets",
	Doc:  "each file of a pod's /run/secrets holds what its secret's kind says, from OpenBao; the service starts after them and cannot read the pod's identity",
	Scenarios: []*Scenario{{
		Name: "files-hold-their-values",
		Spec: []string{"US1-9", "US1-11", "US1-12", "US1-16"},
		Doc:  "a field is its KV value, base64 decoded, one variable of an environment file with no line end, a template rendered over the response (with its parameters sent)",
		Skip: needsSecrets,
		Uses: []Capability{capExec, capDatabase, capForward},
		Steps: Checks(Check{Name: "check every secret file of every pod", Do: func(ctx context.Context, s *State) error {
			bao, err := baoClient(s)
			if err != nil {
				return err
			}
			roles, errs := rolesWithSecrets(s.Inv)
			for _, r := range roles {
				for _, file := range slices.Sorted(maps.Keys(r.Secrets)) {
					for _, pod := range r.pods {
						if err := checkSecretFile(ctx, s, bao, r.Role, pod, file, r.Secrets[file]); err != nil {
							errs = append(errs, fmt.Errorf("role %s, pod %s, secret %s: %w", r.name, pod.Name, file, err))
						}
					}
				}
			}
			return joinErrors(errs)
		}}),
	}, {
		Name: "service-started-after-secrets",
		Spec: []string{"US1-7"},
		Doc:  "in each pod of a role with secrets, the service's container started after every file of /run/secrets existed: its start time against the files' times (the pod's own clock where the kubelet's second ties them; inconclusive where the kubelet no longer keeps the first run)",
		Skip: func(w world.World) string {
			if why := needsSecrets(w); why != "" {
				return why
			}
			return needsPodFiles(w)
		},
		Uses:  []Capability{capPodStatus, capExec},
		Steps: Checks(Check{Name: "compare each service's start with its files' times", Do: serviceStartedAfterSecrets}),
	}, {
		Name: "identity-not-readable",
		Spec: []string{"US1-7"},
		Doc:  "the service of a pod with secrets cannot read the pod's identity: its service-account token is absent or unreadable to the containers but secrets",
		Skip: func(w world.World) string {
			if why := needsSecrets(w); why != "" {
				return why
			}
			return podsLack(w, world.NeedsRoot)
		},
		Uses:  []Capability{capIdentity},
		Steps: Checks(Check{Name: "look for each pod's service-account token", Do: identityNotReadable}),
	}},
}

// needsPodFiles says why the pods' services and files cannot be looked
// at: the world cannot look at a pod of a role with secrets.
func needsPodFiles(w world.World) string {
	return podsLack(w, world.NeedsStatusAndSecrets)
}

// podsLack says why the inventory's world cannot look at the pods of its
// roles with secrets for needs, naming the first pod it cannot.
func podsLack(w world.World, needs world.Needs) string {
	inv := w.Inventory()
	for _, name := range slices.Sorted(maps.Keys(inv.Roles)) {
		r := inv.Roles[name]
		for _, p := range r.Pods {
			if len(r.Secrets) == 0 {
				continue
			}
			if why := w.Lacks(p, needs); why != "" {
				return why
			}
		}
	}
	return ""
}

func identityNotReadable(ctx context.Context, s *State) error {
	roles, errs := rolesWithSecrets(s.Inv)
	for _, r := range roles {
		for _, pod := range r.pods {
			notes, err := s.World.IdentityNotReadable(ctx, pod)
			for _, n := range notes {
				s.Note("%s", n)
			}
			errs = append(errs, err)
		}
	}
	return joinErrors(errs)
}

// podsWithSecrets is a role with secrets and its pods.
type podsWithSecrets struct {
	*inventory.Role
	name string
	pods []inventory.Endpoint
}

// rolesWithSecrets are the roles of the inventory that have secrets, in
// name order, with their pods; for each that has no Running pod, an error
// naming it (podsOf), for the scenario to report beside what it judges.
func rolesWithSecrets(inv *inventory.Inventory) ([]podsWithSecrets, []error) {
	var out []podsWithSecrets
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(inv.Roles)) {
		r := inv.Roles[name]
		if len(r.Secrets) == 0 {
			continue
		}
		pods, err := podsOf(inv, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, podsWithSecrets{Role: r, name: name, pods: pods})
	}
	return out, errs
}

func needsSecrets(w world.World) string {
	inv := w.Inventory()
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
	if why := s.World.Lacks(pod, world.NeedsStatusAndSecrets); why != "" {
		return poll.Permanent(errors.New(why))
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
	return fieldOf(data, s)
}

// fieldOf is what the file of a field secret holds for data, a KV entry's
// data.
func fieldOf(data map[string]any, s facts.Secret) (string, error) {
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

// setFieldValue puts v into data, a KV entry's data, so that the file of
// the field secret s holds v: fieldOf's inverse.
func setFieldValue(data map[string]any, s facts.Secret, v string) error {
	base64Field := s.Encoding != nil && *s.Encoding == "base64"
	if s.Variable != nil {
		held, _ := data[*s.Field].(string)
		if base64Field {
			// The variables are in the decoded field, as fieldOf reads them.
			decoded, err := base64.StdEncoding.DecodeString(held)
			if err != nil {
				return fmt.Errorf("field %s of %s is not base64: %w", *s.Field, s.Path, err)
			}
			held = string(decoded)
		}
		lines := strings.Split(held, "\n")
		found := false
		for i, line := range lines {
			if strings.HasPrefix(line, *s.Variable+"=") {
				lines[i], found = *s.Variable+"="+v, true
			}
		}
		if !found {
			return fmt.Errorf("field %s of %s has no variable %s", *s.Field, s.Path, *s.Variable)
		}
		v = strings.Join(lines, "\n")
	}
	if base64Field {
		v = base64.StdEncoding.EncodeToString([]byte(v))
	}
	data[*s.Field] = v
	return nil
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
	db, err := roleDatabase(s)
	if err != nil {
		return err
	}
	_, done, err := db.connect(ctx, s, url.UserPassword(user, password))
	switch {
	case errors.Is(err, errConnect):
		return poll.Saw("a credential that does not log in to Postgres (%v)", err)
	case err != nil:
		return err
	}
	done()
	return nil
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

// serviceStartedAfterSecrets compares, in each pod of each role with
// secrets, the start of the service's current run with the times its
// secret files were written. A file written after the start is explained
// only by a new value since: a secret with restart then restarts the
// service (a restart is waited for), a KV entry's newer version is in its
// metadata, and an engine that issues values (a credential, a
// certificate) writes new ones by itself. Otherwise the service started
// before the file existed.
func serviceStartedAfterSecrets(ctx context.Context, s *State) error {
	bao, err := baoClient(s)
	if err != nil {
		return err
	}
	roles, errs := rolesWithSecrets(s.Inv)
	for _, role := range roles {
		files := slices.Sorted(maps.Keys(role.Secrets))
		for _, pod := range role.pods {
			probe := poll.Probe{Endpoint: podWhere(s, pod), Expect: fmt.Sprintf("the service of pod %s to have started after %s", pod.Name, strings.Join(files, ", ")), Within: s.Patience}
			err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
				st, err := podStatus(ctx, s, pod)
				if err != nil {
					return err
				}
				if st.StartedAt.IsZero() {
					return poll.Saw("its service not running")
				}
				written, err := secretTimes(ctx, s, pod, files)
				if err != nil {
					return err
				}
				start := st.StartedAt
				var under time.Time // the first process under the first, by the pod's clock
				if tied := tiedWithStart(written, start); len(tied) > 0 {
					// The kubelet keeps seconds: a file of the second the
					// service started may be after it.
					clock, ok, err := s.World.FinerClock(ctx, pod, files)
					if err != nil {
						return err
					}
					if !ok {
						return inconclusive("pod %s: %s written in the second its service started (%s), which the kubelet's clock cannot order, and the service's container has no shell, GNU stat or /proc to read a finer one", pod.Name, strings.Join(tied, ", "), start.Format(time.TimeOnly))
					}
					s.Note("pod %s: %s written in the second its service started; by the pod's own clock, its container started at %s", pod.Name, strings.Join(tied, ", "), clock.Start.Format(timeOfDay))
					start, written, under = clock.Start, clock.Written, clock.Under
				}
				due, err := filesAfterStart(ctx, s, bao, pod, role.Secrets, written, start, false)
				if err != nil {
					return err
				}
				if starting := writtenWhileStarting(due, written, start, under); len(starting) > 0 {
					// A supervisor or a wrapper reads the files before it
					// starts the service: one written meanwhile may have
					// been read new, and no restart was then due.
					return inconclusive("pod %s: %s written at %s, after its container's first process started (%s) and before the process under it did (%s): whether the service read the old value or the new one is not known", pod.Name, strings.Join(starting, ", "), written[starting[0]].Format(timeOfDay), start.Format(timeOfDay), under.Format(timeOfDay))
				}
				if len(due) > 0 {
					return poll.Saw("its service started at %s (restart %d), before %s, secrets with restart that it did not restart for", start.Format(timeOfDay), st.RestartCount, writtenAt(due, written))
				}
				run := "its first run"
				switch {
				case st.RestartCount == 1 && st.LastExit != nil && !st.LastExit.StartedAt.IsZero():
					// The first run is the one that may have started
					// before the files: a service that could not read them
					// exits, and its second run finds them.
					first := st.LastExit.StartedAt
					rewritten, err := filesAfterStart(ctx, s, bao, pod, role.Secrets, written, first, true)
					if err != nil {
						return err
					}
					if len(rewritten) > 0 {
						return inconclusive("pod %s: %s, secrets with restart, were written again after its service's first run started (%s): whether they were files when it started is not known", pod.Name, writtenAt(rewritten, written), first.Format(timeOfDay))
					}
					run = fmt.Sprintf("its second run; its first run, which ended with %s, started at %s, after them too", st.LastExit, first.Format(timeOfDay))
				case st.RestartCount > 0:
					return inconclusive("pod %s: its service restarted %d times, and the kubelet keeps only the last ended run: when the first run started, which its secrets must precede, is not known (its current run started at %s, after them)", pod.Name, st.RestartCount, start.Format(timeOfDay))
				}
				s.Note("pod %s: the service started at %s, in %s, after its %d secret files", pod.Name, start.Format(timeOfDay), run, len(files))
				return nil
			})
			errs = append(errs, err)
		}
	}
	return joinErrors(errs)
}

// writtenWhileStarting are the files of due (by name, in name order)
// written between the start of the container's first process and of the
// first process under it (under, zero where none is known).
func writtenWhileStarting(due []string, written map[string]time.Time, start, under time.Time) []string {
	if under.IsZero() {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(due), func(f string) bool {
		t := written[f]
		return !t.After(start) || !t.Before(under)
	})
}

// filesAfterStart finds the secret files written after a run of the
// service started. A file that a newer KV version or its engine explains
// is noted; one that nothing explains is a Permanent error. The secrets
// with restart written after it are returned, by name, in name order: for
// the current run, a
// restart is due for them; for the first run (first), one may be what
// restarted it, and its first write is lost.
func filesAfterStart(ctx context.Context, s *State, bao *openbao.Client, pod inventory.Endpoint, secrets map[string]facts.Secret, written map[string]time.Time, start time.Time, first bool) ([]string, error) {
	run := "its service started"
	if first {
		run = "its service's first run started"
	}
	var due []string
	for _, f := range slices.Sorted(maps.Keys(secrets)) {
		at, sec := written[f], secrets[f]
		if !at.After(start) {
			continue
		}
		switch {
		case sec.Restart:
			due = append(due, f)
		case keepsValues(sec):
			version, err := bao.KVWritten(ctx, sec.Path)
			if err != nil {
				return nil, err
			}
			if !version.After(start) {
				return nil, poll.Permanent(fmt.Errorf("pod %s: %s at %s, before %s existed: the file was written at %s, and %s has no newer value to explain a rewrite (its version is of %s): the service must start after each secret is a file",
					pod.Name, run, start.Format(timeOfDay), f, at.Format(timeOfDay), sec.Path, version.Format(timeOfDay)))
			}
			s.Note("pod %s: %s has a new value since %s (a version of %s of %s)", pod.Name, f, run, sec.Path, version.Format(timeOfDay))
		default:
			s.Note("pod %s: %s was written anew by its engine since %s: it says nothing of the start", pod.Name, f, run)
		}
	}
	return due, nil
}

// writtenAt names files with the times they were written.
func writtenAt(files []string, written map[string]time.Time) string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = fmt.Sprintf("%s (written at %s)", f, written[f].Format(timeOfDay))
	}
	return strings.Join(out, ", ")
}

// tiedWithStart are the files written in the second a start that the
// kubelet recorded (whole seconds) names: their order is not known.
func tiedWithStart(written map[string]time.Time, start time.Time) []string {
	if start.Nanosecond() != 0 {
		return nil
	}
	var out []string
	for _, f := range slices.Sorted(maps.Keys(written)) {
		if written[f].Unix() == start.Unix() {
			out = append(out, f)
		}
	}
	return out
}

// timeOfDay writes the times of starts and files, to the millisecond: a
// start and a file's write may be a few apart.
const timeOfDay = "15:04:05.000"

// secretTimes are the times a pod's secret files were last written.
func secretTimes(ctx context.Context, s *State, pod inventory.Endpoint, files []string) (map[string]time.Time, error) {
	return s.World.SecretTimes(ctx, pod, files)
}
