package scenarios

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/openbao"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/scenarios/inventory"
)

// The rotation suite: a new value of a secret with restart restarts the
// service in the same pod, and a new value of one without restart changes
// its file and restarts nothing (US1-13); a restart of the sidecar restarts
// nothing where the secrets with restart keep their values, and restarts
// the service where one of them is of an engine that issues a new value at
// each read (US1-13 and its Known Deviation); a new credential of the
// database engine restarts authelia, the old one no longer logs in to
// Postgres, and the portal works again (SC-005), and likewise for the
// replicas of lldap (SC-003).
var rotationSuite = &Suite{
	Name: "rotation",
	Doc:  "new secret values and sidecar restarts restart exactly the services whose secrets ask for it, in the same pod; logins work again",
	Scenarios: []*Scenario{
		credentialRotation("new-credential-restarts-authelia", autheliaRole, []string{"SC-005", "US1-13"},
			"revoking the database credential of the role that runs authelia restarts it in the same pod with a new one; the old one no longer logs in; the portal works again",
			Check{Name: "a login through the portal works again", Do: func(ctx context.Context, s *State) error {
				_, err := portalLogin(ctx, s, true)
				return err
			}}),
		credentialRotation("new-credential-restarts-lldap-replicas", ldapRole, []string{"SC-003", "US1-13"},
			"revoking the database credential of the role that serves the ldap contract restarts each replica in its pod with a new one; each pod answers a bind again",
			Check{Name: "each pod answers a bind again", Do: eachPodFinds}),
		kvRotation("restart-secret-restarts", true,
			"a new value of a KV secret with restart reaches each pod's file and restarts its service in the same pod"),
		kvRotation("secret-without-restart-restarts-nothing", false,
			"a new value of a KV secret without restart reaches each pod's file and restarts nothing"),
		{
			Name:      "sidecar-restart-restarts-nothing",
			Spec:      []string{"US1-13"},
			Doc:       "a restart of the sidecar of a pod whose secrets with restart are all KV entries (their value is the same at a new read) rewrites none of them and restarts nothing, for the agent's render interval and the time a restart takes",
			Skip:      func(inv *inventory.Inventory) string { return needsSidecarRestart(inv, valuesKept) },
			Exclusive: true,
			Steps:     sidecarRestartKeepsService(),
		},
		{
			Name:      "sidecar-restart-restarts-pki",
			Spec:      []string{"US1-13", "Known Deviations"},
			Doc:       "a restart of the sidecar of a pod with a secret with parameters and restart (an engine that issues a value at each read, as PKI does) writes a new value, and the service restarts in the same pod",
			Skip:      func(inv *inventory.Inventory) string { return needsSidecarRestart(inv, newValues) },
			Exclusive: true,
			Steps:     sidecarRestartRestartsService(),
		},
	},
}

// rotatedRole picks the role of the inventory whose credential a
// credential rotation revokes, or says why there is none: the node names
// its roles, so the role is the one that runs the service, never a name
// the suite assumes.
type rotatedRole func(inv *inventory.Inventory) (role, why string)

// autheliaRole is the role that runs authelia, whose login through the
// portal shows it works again.
func autheliaRole(inv *inventory.Inventory) (string, string) {
	if why := needsPortal(inv); why != "" {
		return "", why
	}
	return inv.Authelia.Role, ""
}

// ldapRole is the role that serves the ldap contract, whose pods answer a
// bind again.
func ldapRole(inv *inventory.Inventory) (string, string) {
	if why := needsLDAP(inv); why != "" {
		return "", why
	}
	return inv.LDAP.Role, ""
}

// credentialRotation is a scenario that revokes the database credential
// of the role pick names, sees each pod restart its service with a new one
// in the same pod and the old one refused, and then checks the service
// works again.
func credentialRotation(name string, pick rotatedRole, spec []string, doc string, again Check) *Scenario {
	return &Scenario{
		Name: name,
		Spec: spec,
		Doc:  doc,
		Skip: func(inv *inventory.Inventory) string {
			if inv.OpenBao == nil {
				return "the inventory has no openbao"
			}
			role, why := pick(inv)
			if why != "" {
				return why
			}
			return needsRotation(inv, role, true)
		},
		Exclusive: true,
		Steps: Sequence(
			Step[credentials]{Name: "note each pod and its credential", Do: func(ctx context.Context, s *State, v *credentials) error {
				v.role, _ = pick(s.Inv)
				return noteCredential(ctx, s, v)
			}},
			Step[credentials]{Name: "revoke the credential in OpenBao", Do: func(ctx context.Context, s *State, v *credentials) error {
				return revokeCredential(ctx, s, v)
			}},
			Step[credentials]{Name: "each pod restarts its service with a new credential", Do: func(ctx context.Context, s *State, v *credentials) error {
				return restartedWithNewCredential(ctx, s, v)
			}},
			Step[credentials]{Name: "the old credential no longer logs in", Do: func(ctx context.Context, s *State, v *credentials) error {
				return oldCredentialRefused(ctx, s, v)
			}},
			Step[credentials]{Name: again.Name, Do: func(ctx context.Context, s *State, _ *credentials) error { return again.Do(ctx, s) }},
		),
	}
}

// credentials is what the steps of a credential rotation share.
type credentials struct {
	// role is the role whose credential is revoked.
	role string
	// before is each pod's service and credential before the revocation.
	before map[string]podBefore
	// ttl bounds how long the sidecars take to notice the revocation.
	ttl       time.Duration
	revokedAt time.Time
}

// kvRotation is a scenario that writes a new value of the KV secret that
// the inventory's rotation names, with restart or without.
func kvRotation(name string, restart bool, doc string) *Scenario {
	return &Scenario{
		Name:      name,
		Spec:      []string{"US1-13"},
		Doc:       doc,
		Skip:      func(inv *inventory.Inventory) string { return needsKVSecret(inv, restart) },
		Exclusive: true,
		Steps: Checks(Check{Name: "write a new value and watch each pod", Do: func(ctx context.Context, s *State) error {
			return newKVValue(ctx, s, restart)
		}}),
	}
}

// needsRotation says why a role's credential cannot be rotated here.
func needsRotation(inv *inventory.Inventory, role string, credential bool) string {
	if inv.OpenBao == nil {
		return "the inventory has no openbao"
	}
	r, ok := inv.Roles[role]
	if !ok {
		return "the inventory has no role " + role
	}
	for _, p := range r.Pods {
		if (p.StatusFile == "" || p.SecretsDir == "") && (inv.Cluster == nil || p.UID == "") {
			return fmt.Sprintf("pod %s has no statusFile and secretsDir in the inventory, and is no pod of a cluster", p.Name)
		}
	}
	if credential && len(databaseSecrets(r)) == 0 {
		return "role " + role + " has no secret of the database engine"
	}
	return ""
}

// databaseSecrets are the role's secrets of OpenBao's database engine
// whose template holds the username or the password.
func databaseSecrets(r *inventory.Role) map[string]facts.Secret {
	out := map[string]facts.Secret{}
	for file, sec := range r.Secrets {
		if strings.HasPrefix(sec.Path, "database/creds/") && sec.Template != nil &&
			(strings.Contains(*sec.Template, ".Data.username") || strings.Contains(*sec.Template, ".Data.password")) {
			out[file] = sec
		}
	}
	return out
}

// credentialOf reads the username and password a pod's files hold.
func credentialOf(ctx context.Context, s *State, r *inventory.Role, pod inventory.Endpoint) (user, password string, err error) {
	values := map[string]string{}
	for file, sec := range databaseSecrets(r) {
		data, err := readPodSecret(ctx, s, pod, file)
		if err != nil {
			return "", "", err
		}
		pattern, err := templatePattern(*sec.Template)
		if err != nil {
			return "", "", err
		}
		m := pattern.FindSubmatch(data)
		if m == nil {
			return "", "", fmt.Errorf("%s does not render its template", file)
		}
		for i, name := range pattern.SubexpNames() {
			if name != "" {
				values[name] = string(m[i])
			}
		}
	}
	if values["username"] == "" || values["password"] == "" {
		return "", "", fmt.Errorf("no username and password in the files of the database engine")
	}
	return values["username"], values["password"], nil
}

type podBefore struct {
	status         *inventory.PodStatus
	user, password string
}

// noteCredential notes each pod's service and credential before the
// revocation; a role with no Running pod fails here, before anything is
// revoked.
func noteCredential(ctx context.Context, s *State, v *credentials) error {
	r := s.Inv.Roles[v.role]
	pods, err := podsOf(s.Inv, v.role)
	if err != nil {
		return err
	}
	before := map[string]podBefore{}
	for _, pod := range pods {
		st, err := podStatus(ctx, s, pod)
		if err != nil {
			return poll.Permanent(fmt.Errorf("pod %s: %w", pod.Name, err))
		}
		user, password, err := credentialOf(ctx, s, r, pod)
		if err != nil {
			return poll.Permanent(fmt.Errorf("pod %s: %w", pod.Name, err))
		}
		before[pod.Name] = podBefore{st, user, password}
		s.Note("pod %s (uid %s) runs its service for the %d. time, as %s", pod.Name, st.UID, st.RestartCount+1, user)
	}
	v.before = before
	return nil
}

func baoClient(s *State) (*openbao.Client, error) {
	token, err := inventory.ReadSecret(s.Inv.OpenBao.TokenFile)
	if err != nil {
		return nil, poll.Permanent(err)
	}
	return openbao.New(s.Inv.OpenBao.Address, token), nil
}

// revokeCredential revokes every lease of the role's database secrets, as
// an operator does to rotate a credential, and notes the TTL that bounds
// how long the sidecars take to notice.
func revokeCredential(ctx context.Context, s *State, v *credentials) error {
	bao, err := baoClient(s)
	if err != nil {
		return err
	}
	paths := map[string]bool{}
	for _, sec := range databaseSecrets(s.Inv.Roles[v.role]) {
		paths[sec.Path] = true
	}
	var ttl time.Duration
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		if err := bao.Do(ctx, http.MethodPut, "sys/leases/revoke-prefix/"+path, nil, nil); err != nil {
			return err
		}
		// database/creds/ROLE's TTL is database/roles/ROLE's default_ttl.
		var r struct {
			Data struct {
				DefaultTTL int `json:"default_ttl"`
			} `json:"data"`
		}
		if err := bao.Do(ctx, http.MethodGet, strings.Replace(path, "/creds/", "/roles/", 1), nil, &r); err == nil && r.Data.DefaultTTL > 0 {
			ttl = max(ttl, time.Duration(r.Data.DefaultTTL)*time.Second)
		}
		s.Note("revoked the leases of %s", path)
	}
	if ttl == 0 {
		ttl = 30 * time.Second // the role's TTL was not readable
	}
	v.ttl, v.revokedAt = ttl, time.Now()
	return nil
}

// restartedWithNewCredential waits, at most the credential's TTL and a
// margin, until each pod restarted its service in the same pod with a new
// credential.
func restartedWithNewCredential(ctx context.Context, s *State, v *credentials) error {
	r := s.Inv.Roles[v.role]
	ttl, revokedAt := v.ttl, v.revokedAt
	var errs []error
	for _, pod := range r.Pods {
		b := v.before[pod.Name]
		probe := poll.Probe{Endpoint: podWhere(s, pod), Expect: fmt.Sprintf("pod %s (uid %s) to restart its service with a new credential within the TTL %s", pod.Name, b.status.UID, ttl), Within: ttl + 15*time.Second}
		err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			st, err := podStatus(ctx, s, pod)
			if err != nil {
				return err
			}
			if st.UID != b.status.UID {
				return poll.Permanent(fmt.Errorf("pod %s is a new pod (uid %s, was %s): the service must restart in the same pod", pod.Name, st.UID, b.status.UID))
			}
			user, _, err := credentialOf(ctx, s, r, pod)
			if err != nil {
				return err
			}
			if st.RestartCount <= b.status.RestartCount || user == b.user {
				return poll.Saw("restart count %d and user %s", st.RestartCount, user)
			}
			s.Note("pod %s restarted its service in the same pod (restart %d, now as %s), %s after the revocation", pod.Name, st.RestartCount, user, time.Since(revokedAt).Round(100*time.Millisecond))
			return nil
		})
		errs = append(errs, err)
	}
	return joinErrors(errs)
}

// oldCredentialRefused proves the noted credentials no longer log in.
func oldCredentialRefused(ctx context.Context, s *State, v *credentials) error {
	if s.Inv.Postgres == nil {
		return poll.Permanent(fmt.Errorf("the inventory has no postgres to try the old credential at"))
	}
	u, _, err := dsn(s)
	if err != nil {
		return err
	}
	for _, pod := range slices.Sorted(maps.Keys(v.before)) {
		b := v.before[pod]
		u.User = url.UserPassword(b.user, b.password)
		db, err := pgx.Connect(ctx, u.String())
		if err == nil {
			db.Close(ctx)
			return fmt.Errorf("the old credential %s still logs in to Postgres after its revocation", b.user)
		}
		// Only Postgres refusing the credential counts: a server that
		// is down refuses everyone.
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || (pgErr.Code != "28P01" && pgErr.Code != "28000") {
			return fmt.Errorf("trying the old credential %s: %v; want Postgres to refuse it", b.user, err)
		}
		s.Note("the old credential %s of pod %s is refused (%s)", b.user, pod, pgErr.Code)
	}
	return nil
}

// needsKVSecret says why no KV field secret with (or without) restart may
// be given a new value here.
func needsKVSecret(inv *inventory.Inventory, restart bool) string {
	ref := kvSecret(inv, restart)
	if ref == nil {
		return fmt.Sprintf("the inventory's rotation names no secret to write (rotation.%s)", map[bool]string{true: "restart", false: "noRestart"}[restart])
	}
	if why := needsRotation(inv, ref.Role, false); why != "" {
		return why
	}
	sec := inv.Roles[ref.Role].Secrets[ref.File]
	if sec.Restart != restart || sec.Field == nil || sec.Variable != nil || sec.Template != nil || !strings.Contains(sec.Path, "/data/") {
		return fmt.Sprintf("secret %s of role %s is no KV field secret with restart %v", ref.File, ref.Role, restart)
	}
	return ""
}

// kvSecret is the secret the inventory lets the suite write.
func kvSecret(inv *inventory.Inventory, restart bool) *inventory.SecretRef {
	switch {
	case inv.Rotation == nil:
		return nil
	case restart:
		return inv.Rotation.Restart
	}
	return inv.Rotation.NoRestart
}

// newKVValue writes a new value of a KV secret and watches each pod: the
// file gets it, and the service restarts in the same pod exactly when the
// secret has restart.
func newKVValue(ctx context.Context, s *State, restart bool) error {
	ref := kvSecret(s.Inv, restart)
	role, file := ref.Role, ref.File
	r := s.Inv.Roles[role]
	sec := r.Secrets[file]
	// Nothing is written for a role with no pod to watch.
	pods, err := podsOf(s.Inv, role)
	if err != nil {
		return err
	}
	bao, err := baoClient(s)
	if err != nil {
		return err
	}
	data, err := bao.KV(ctx, sec.Path)
	if err != nil {
		return err
	}
	raw := make([]byte, 24)
	rand.Read(raw)
	want := base64.RawURLEncoding.EncodeToString(raw)
	data[*sec.Field] = want
	if sec.Encoding != nil && *sec.Encoding == "base64" {
		data[*sec.Field] = base64.StdEncoding.EncodeToString([]byte(want))
	}
	before := map[string]*inventory.PodStatus{}
	for _, pod := range pods {
		st, err := podStatus(ctx, s, pod)
		if err != nil {
			return poll.Permanent(err)
		}
		before[pod.Name] = st
	}
	if err := bao.Write(ctx, sec.Path, map[string]any{"data": data}); err != nil {
		return err
	}
	s.Note("wrote a new value of %s (file %s of role %s, restart %v)", sec.Path, file, role, restart)
	var errs []error
	for _, pod := range pods {
		b := before[pod.Name]
		err := poll.Eventually(ctx, poll.Probe{Endpoint: secretWhere(s, pod, file), Expect: "the new value in pod " + pod.Name, Within: s.Patience}, func(ctx context.Context) error {
			got, err := readPodSecret(ctx, s, pod, file)
			if err != nil {
				return err
			}
			if string(got) != want {
				return poll.Saw("the old value")
			}
			return nil
		})
		if err == nil && restart {
			err = poll.Eventually(ctx, poll.Probe{Endpoint: podWhere(s, pod), Expect: fmt.Sprintf("pod %s to restart its service in the same pod", pod.Name), Within: s.Patience}, func(ctx context.Context) error {
				st, err := podStatus(ctx, s, pod)
				if err != nil {
					return err
				}
				if st.UID != b.UID {
					return poll.Permanent(fmt.Errorf("a new pod (uid %s, was %s)", st.UID, b.UID))
				}
				if st.RestartCount <= b.RestartCount {
					return poll.Saw("restart count %d still", st.RestartCount)
				}
				s.Note("pod %s restarted its service in the same pod (restart %d)", pod.Name, st.RestartCount)
				return nil
			})
		}
		if err == nil && !restart {
			// The file has the new value: a restart for it would come
			// within the time a restart takes to act on a file.
			err = poll.Consistently(ctx, poll.Probe{Endpoint: podWhere(s, pod), Expect: fmt.Sprintf("pod %s to leave its service running", pod.Name), Within: restartReaction}, func(ctx context.Context) error {
				st, err := podStatus(ctx, s, pod)
				if err != nil {
					return err
				}
				if st.UID != b.UID || st.RestartCount != b.RestartCount {
					return poll.Saw("restart count %d (was %d), uid %s (was %s)", st.RestartCount, b.RestartCount, st.UID, b.UID)
				}
				return nil
			})
			if err == nil {
				s.Note("pod %s has the new value and did not restart", pod.Name)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", pod.Name, err))
		}
	}
	return joinErrors(errs)
}
