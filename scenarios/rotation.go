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
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/openbao"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// The rotation suite checks who restarts when secrets change:
//   - A new value of a secret with restart restarts the service in the
//     same pod. A new value of one without restart changes its file and
//     restarts nothing (US1-13).
//   - A restart of the sidecar restarts nothing where the secrets with
//     restart keep their values. It restarts the service where one of
//     them comes from an engine that issues a new value at each read
//     (US1-13 and its Known Deviation).
//   - A new credential of the database engine restarts authelia, the old
//     one no longer logs in to Postgres, and the portal works again
//     (SC-005). Likewise for the replicas of lldap (SC-003).
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
			"a new value of a KV secret with restart reaches each pod's file and restarts its service in the same pod, after the file changed there, the replicas together"),
		kvRotation("secret-without-restart-restarts-nothing", false,
			"a new value of a KV secret without restart reaches each pod's file and restarts nothing, from the new value until the old one is back (an exit while a secret with restart changed too is inconclusive)"),
		{
			Name:       "reader-password-follows-rotation",
			Spec:       []string{"SC-004", "Known Deviations"},
			Doc:        "a new value of the reader's password in its KV entry reaches the main pod's file (fediversity.lldap.readerBindPasswordFile) and the lldap role's bind-password in each pod, as every reader needs after a rotation; the old value is put back",
			Skip:       needsReaderPasswordRotation,
			Window:     renderWindowOf(readerRender),
			Exclusive:  true,
			Disruptive: true,
			Uses:       []Capability{capPodStatus, capExec},
			Steps:      Checks(Check{Name: "write a new reader's password and compare every copy", Do: readerPasswordRotated}),
		},
		{
			Name:       "sidecar-restart-restarts-nothing",
			Spec:       []string{"US1-13"},
			Doc:        "a restart of the sidecar of a pod whose secrets with restart are all KV entries (their value is the same at a new read) rewrites none of them and restarts nothing, for the agent's render interval and the time a restart takes",
			Skip:       func(w world.World) string { return needsSidecarRestart(w, valuesKept) },
			Window:     renderWindow(func(inv *inventory.Inventory) string { role, _ := sidecarRole(inv, valuesKept); return role }),
			Exclusive:  true,
			Disruptive: true,
			Uses:       []Capability{capPodStatus, capExec},
			Steps:      sidecarRestartKeepsService(),
		},
		{
			Name:       "sidecar-restart-restarts-pki",
			Spec:       []string{"US1-13", "Known Deviations"},
			Doc:        "a restart of the sidecar of a pod with a secret with parameters and restart (an engine that issues a value at each read, as PKI does) writes a new value, and the service restarts in the same pod",
			Skip:       func(w world.World) string { return needsSidecarRestart(w, newValues) },
			Exclusive:  true,
			Disruptive: true,
			Uses:       []Capability{capPodStatus, capExec, capKubeletStop},
			Steps:      sidecarRestartRestartsService(),
		},
	},
}

// rotatedRole picks the role of the inventory whose credential a
// credential rotation revokes, or says why there is none: the node names
// its roles, so the role is the one that runs the service, never a name
// the suite assumes.
type rotatedRole func(w world.World) (role, why string)

// autheliaRole is the role that runs authelia, whose login through the
// portal shows it works again.
func autheliaRole(w world.World) (string, string) {
	if why := needsPortal(w); why != "" {
		return "", why
	}
	return w.Inventory().Authelia.Role, ""
}

// ldapRole is the role that serves the ldap contract, whose pods answer a
// bind again.
func ldapRole(w world.World) (string, string) {
	if why := needsLDAP(w); why != "" {
		return "", why
	}
	return w.Inventory().LDAP.Role, ""
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
		Skip: func(w world.World) string {
			inv := w.Inventory()
			if inv.OpenBao == nil {
				return "the inventory has no openbao"
			}
			role, why := pick(w)
			if why != "" {
				return why
			}
			return needsRotation(w, role, true)
		},
		Exclusive:  true,
		Disruptive: true,
		Uses:       []Capability{capPodStatus, capExec, capKubeletStop, capDatabase, capForward},
		Steps: Sequence(
			Step[credentials]{Name: "note each pod and its credential", Do: func(ctx context.Context, s *State, v *credentials) error {
				v.role, _ = pick(s.World)
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
		Name:       name,
		Spec:       []string{"US1-13"},
		Doc:        doc,
		Skip:       func(w world.World) string { return needsKVSecret(w, restart) },
		Window:     renderWindow(func(inv *inventory.Inventory) string { return kvSecret(inv, restart).Role }),
		Exclusive:  true,
		Disruptive: true,
		Uses:       kvRotationUses(restart),
		Steps: Checks(Check{Name: "write a new value and watch each pod", Do: func(ctx context.Context, s *State) error {
			return newKVValue(ctx, s, restart)
		}}),
	}
}

// kvRotationUses: a restart is told from the kubelet's stop by its
// events.
func kvRotationUses(restart bool) []Capability {
	if restart {
		return []Capability{capPodStatus, capExec, capKubeletStop}
	}
	return []Capability{capPodStatus, capExec}
}

// needsRotation says why a role's credential cannot be rotated here.
func needsRotation(w world.World, role string, credential bool) string {
	inv := w.Inventory()
	if inv.OpenBao == nil {
		return "the inventory has no openbao"
	}
	r, ok := inv.Roles[role]
	if !ok {
		return "the inventory has no role " + role
	}
	for _, p := range r.Pods {
		if why := w.Lacks(p, world.NeedsStatusAndSecrets); why != "" {
			return why
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

// revokeCredential revokes the lease of each pod's credential, as an
// operator does to rotate a credential, and notes the TTL that bounds how
// long the sidecars take to notice. It never revokes a whole prefix:
// other consumers of the same database role keep their credentials.
func revokeCredential(ctx context.Context, s *State, v *credentials) error {
	bao, err := baoClient(s)
	if err != nil {
		return err
	}
	paths := map[string]bool{}
	for _, sec := range databaseSecrets(s.Inv.Roles[v.role]) {
		paths[sec.Path] = true
	}
	// Every lease is found, and its TTL read, before any is revoked: a
	// scenario that cannot tell which leases are the pods', or how long
	// the sidecars may take, disrupts nothing.
	var ttl time.Duration
	leases := map[string][]string{}
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		ids, leaseTTL, err := podLeases(ctx, bao, path, v.before)
		if err != nil {
			return poll.Permanent(err)
		}
		leases[path] = ids
		// A renewed lease's TTL is the role's default_ttl
		// (database/roles/ROLE); the lease's own TTL left bounds the
		// sidecars' next renewal too.
		var r struct {
			Data struct {
				DefaultTTL int `json:"default_ttl"`
			} `json:"data"`
		}
		if err := bao.Do(ctx, http.MethodGet, strings.Replace(path, "/creds/", "/roles/", 1), nil, &r); err == nil && r.Data.DefaultTTL > 0 {
			ttl = max(ttl, time.Duration(r.Data.DefaultTTL)*time.Second)
		}
		ttl = max(ttl, leaseTTL)
	}
	if ttl == 0 {
		return inconclusive("neither the database role's default_ttl nor the leases' TTL of %s could be read: how long the sidecars may take to notice a revocation is not known, and nothing was revoked", strings.Join(slices.Sorted(maps.Keys(paths)), ", "))
	}
	for _, path := range slices.Sorted(maps.Keys(leases)) {
		for _, id := range leases[path] {
			if err := bao.Do(ctx, http.MethodPut, "sys/leases/revoke", map[string]string{"lease_id": id}, nil); err != nil {
				return err
			}
		}
		s.Note("revoked %d leases of %s, those of the pods' credentials: %s", len(leases[path]), path, strings.Join(leases[path], ", "))
	}
	v.ttl, v.revokedAt = ttl, time.Now()
	// The sidecars notice the revocation by the credential's TTL at the
	// latest, render the new one, and the service restarts for it.
	render, where := agentRender(ctx, s.World, v.role)
	s.Wait(ttl+render+restartReaction, fmt.Sprintf("the credential's TTL %s, the agents' render interval %s (%s), and %s for a restart to act", ttl, render, where, restartReaction))
	return nil
}

// podLeases finds the leases of path that the pods' credentials hold,
// and the longest TTL left of them. A lease does not say which username
// it issued; the database engine's usernames end in the time they were
// made ({{unix_time}}), which is the lease's issue time, or a second
// before it. The match is by time alone, so a revocation must not hit
// another consumer's lease of the same second. Where the pods' leases
// cannot be told apart from others' (more leases in their seconds than
// pods), the scenario is inconclusive, and nothing is revoked.
func podLeases(ctx context.Context, bao *openbao.Client, path string, pods map[string]podBefore) ([]string, time.Duration, error) {
	var list struct {
		Data struct {
			Keys []string `json:"keys"`
		} `json:"data"`
	}
	if err := bao.Do(ctx, "LIST", "sys/leases/lookup/"+path+"/", nil, &list); err != nil {
		return nil, 0, fmt.Errorf("list the leases of %s: %w", path, err)
	}
	issued := map[string]time.Time{}
	ttls := map[string]time.Duration{}
	for _, key := range list.Data.Keys {
		id := path + "/" + key
		var lease struct {
			Data struct {
				IssueTime time.Time `json:"issue_time"`
				TTL       int       `json:"ttl"`
			} `json:"data"`
		}
		if err := bao.Do(ctx, http.MethodPut, "sys/leases/lookup", map[string]string{"lease_id": id}, &lease); err != nil {
			return nil, 0, fmt.Errorf("look up lease %s: %w", id, err)
		}
		issued[id], ttls[id] = lease.Data.IssueTime, time.Duration(lease.Data.TTL)*time.Second
	}
	users := map[string]string{}
	for name, p := range pods {
		users[name] = p.user
	}
	out, err := matchLeases(path, issued, users)
	if err != nil {
		return nil, 0, err
	}
	var ttl time.Duration
	for _, id := range out {
		ttl = max(ttl, ttls[id])
	}
	return out, ttl, nil
}

// matchLeases are the leases of path (by issue time) that the pods'
// credentials (users, by pod) hold, matched by time alone. More leases in
// the pods' seconds than pods are another consumer's too: inconclusive.
func matchLeases(path string, issued map[string]time.Time, users map[string]string) ([]string, error) {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(users)) {
		made, ok := usernameTime(users[name])
		if !ok {
			return nil, fmt.Errorf("pod %s: its credential's username %s does not end in the time it was made ({{unix_time}} of the role's username_template): its lease cannot be told from the other %d leases of %s, and the runner revokes no lease it did not see in the pod", name, users[name], len(issued), path)
		}
		found := 0
		for id, at := range issued {
			if d := at.Unix() - made; d >= 0 && d <= 1 {
				out = append(out, id)
				found++
			}
		}
		if found == 0 {
			return nil, fmt.Errorf("pod %s: no lease of %s was issued when its credential %s was made (%s)", name, path, users[name], time.Unix(made, 0).UTC().Format(time.TimeOnly))
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	// Each pod holds one lease of path.
	if len(out) > len(users) {
		return nil, inconclusive("%d leases of %s were issued in the seconds the %d pods' credentials were made (%s): a lease holds no username, so the runner cannot tell the pods' from another consumer's, and revokes none", len(out), path, len(users), strings.Join(out, ", "))
	}
	return out, nil
}

// usernameTime reads the time a database engine's username ends in:
// "v-token-lldap-AbC…-1764633600".
func usernameTime(user string) (int64, bool) {
	i := strings.LastIndexByte(user, '-')
	if i < 0 {
		return 0, false
	}
	t, err := strconv.ParseInt(user[i+1:], 10, 64)
	if err != nil || t < 1_000_000_000 {
		return 0, false
	}
	return t, true
}

// waitBackOff gives the steps after a restart the kubelet's crash-loop
// back-off, when the pod's service awaits its restart (backOffLeft, the
// settle step's rule): the service runs again only after it, up to five
// minutes on a stock kubelet.
func waitBackOff(s *State, pod inventory.Endpoint, st *inventory.PodStatus) {
	s.Wait(backOffLeft(st, "the service of pod "+pod.Name))
}

// toPrecisionOf cuts t to the precision of a recorded time: a kubelet
// keeps whole seconds, the local environment's status files do not.
func toPrecisionOf(t, recorded time.Time) time.Time {
	if recorded.Nanosecond() == 0 {
		return t.Truncate(time.Second)
	}
	return t
}

// restartedWithNewCredential waits, at most the patience grown by the
// revocation's window (the credential's TTL, a render, a restart), until
// each pod restarted its service in the same pod with a new credential.
func restartedWithNewCredential(ctx context.Context, s *State, v *credentials) error {
	r := s.Inv.Roles[v.role]
	ttl, revokedAt := v.ttl, v.revokedAt
	var errs []error
	for _, pod := range r.Pods {
		b := v.before[pod.Name]
		probe := poll.Probe{Endpoint: podWhere(s, pod), Expect: fmt.Sprintf("pod %s (uid %s) to restart its service with a new credential within the TTL %s", pod.Name, b.status.UID, ttl), Within: s.Patience}
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
			if st.ExitCount() <= b.status.ExitCount() || user == b.user {
				return poll.Saw("%d exits and user %s", st.ExitCount(), user)
			}
			if err := withKubeletStop(ctx, s, pod, st.LastExit); err != nil {
				return err
			}
			if why := killedNoRestart(st.LastExit, "a new credential"); why != "" {
				return poll.Saw("%s", why)
			}
			waitBackOff(s, pod, st)
			s.Note("pod %s restarted its service in the same pod (%s, now as %s), %s after the revocation", pod.Name, st.LastExit, user, time.Since(revokedAt).Round(100*time.Millisecond))
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
	db, err := roleDatabase(s)
	if err != nil {
		return err
	}
	for _, pod := range slices.Sorted(maps.Keys(v.before)) {
		b := v.before[pod]
		_, done, err := db.connect(ctx, s, url.UserPassword(b.user, b.password))
		if err == nil {
			done()
			return fmt.Errorf("the old credential %s still logs in to Postgres after its revocation", b.user)
		}
		if !errors.Is(err, errConnect) {
			return err
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
func needsKVSecret(w world.World, restart bool) string {
	inv := w.Inventory()
	ref := kvSecret(inv, restart)
	if ref == nil {
		return fmt.Sprintf("the inventory's rotation names no secret to write (rotation.%s)", map[bool]string{true: "restart", false: "noRestart"}[restart])
	}
	if why := needsRotation(w, ref.Role, false); why != "" {
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

// fieldWrite is a new value of a KV field secret, not yet written.
type fieldWrite struct {
	// pods are the role's, which the new value must reach.
	pods []inventory.Endpoint
	bao  *openbao.Client
	// data is the entry with the new value, original as it was.
	data, original map[string]any
	// want is what the secret's file must hold.
	want string
}

// newFieldValue reads the KV entry of a role's field secret and puts a
// new random value in it. Nothing is written for a role with no pod to
// watch.
func newFieldValue(ctx context.Context, s *State, role string, sec facts.Secret) (*fieldWrite, error) {
	pods, err := podsOf(s.Inv, role)
	if err != nil {
		return nil, err
	}
	bao, err := baoClient(s)
	if err != nil {
		return nil, err
	}
	data, err := bao.KV(ctx, sec.Path)
	if err != nil {
		return nil, err
	}
	original := maps.Clone(data)
	raw := make([]byte, 24)
	rand.Read(raw)
	want := base64.RawURLEncoding.EncodeToString(raw)
	if err := setFieldValue(data, sec, want); err != nil {
		return nil, poll.Permanent(err)
	}
	return &fieldWrite{pods: pods, bao: bao, data: data, original: original, want: want}, nil
}

// newKVValue writes a new value of a KV secret and watches each pod: the
// file gets it, and the service restarts in the same pod exactly when the
// secret has restart.
func newKVValue(ctx context.Context, s *State, restart bool) error {
	ref := kvSecret(s.Inv, restart)
	role, file := ref.Role, ref.File
	r := s.Inv.Roles[role]
	sec := r.Secrets[file]
	kw, err := newFieldValue(ctx, s, role, sec)
	if err != nil {
		return err
	}
	pods, bao, data, original, want := kw.pods, kw.bao, kw.data, kw.original, kw.want
	before := map[string]*inventory.PodStatus{}
	files := map[string][]byte{}
	// The other secrets with restart, whose new values would restart the
	// service too: an exit they explain is told to be for neither.
	others := map[string]map[string]string{}
	for _, pod := range pods {
		st, err := podStatus(ctx, s, pod)
		if err != nil {
			return poll.Permanent(err)
		}
		before[pod.Name] = st
		if files[pod.Name], err = readPodSecret(ctx, s, pod, file); err != nil {
			return poll.Permanent(fmt.Errorf("pod %s: %w", pod.Name, err))
		}
		if others[pod.Name], err = restartSecretHashes(ctx, s, pod, r); err != nil {
			return poll.Permanent(err)
		}
		delete(others[pod.Name], file)
	}
	render, _ := agentRender(ctx, s.World, role)
	wrote := time.Now()
	if err := bao.Write(ctx, sec.Path, map[string]any{"data": data}); err != nil {
		return err
	}
	var errs []error
	restarted := map[string]bool{}
	// quiet are the pods that did not restart for a secret without
	// restart; tookExits the exits the pods restarted with for one with.
	quiet, tookExits := map[string]bool{}, map[string]*inventory.Exit{}
	s.Note("wrote a new value of %s (file %s of role %s, restart %v)", sec.Path, file, role, restart)
	for _, pod := range pods {
		b := before[pod.Name]
		// The agent renders a KV entry again once each render interval.
		within := render + s.Patience
		err := poll.Eventually(ctx, poll.Probe{Endpoint: secretWhere(s, pod, file), Expect: "the new value in pod " + pod.Name, Within: within}, func(ctx context.Context) error {
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
			var exit *inventory.Exit
			exit, err = restartedForFile(ctx, s, pod, r, b, file, wrote, others[pod.Name])
			if err == nil {
				restarted[pod.Name], tookExits[pod.Name] = true, exit
			}
		}
		if err == nil && !restart {
			// The file has the new value: a restart for it would come
			// within the time a restart takes to act on a file, and
			// show in the pod's status by the time the old value is back
			// (the final look, after putBack).
			err = restartsNothing(ctx, s, pod, r, b, others[pod.Name], restartReaction, fmt.Sprintf("pod %s to leave its service running", pod.Name))
			if err == nil {
				quiet[pod.Name] = true
				s.Note("pod %s has the new value and did not restart", pod.Name)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", pod.Name, err))
		}
	}
	if restart {
		errs = append(errs, restartedTogether(s, role, tookExits, render))
	}
	// The deployment is left as it was found: the old value, and for a
	// secret with restart the restart it makes.
	errs = append(errs, putBack(ctx, s, bao, pods, kvChange{path: sec.Path, file: file, data: original, files: files, restarted: restarted, render: render}))
	if !restart {
		// The window ends with the old value back in every pod: an exit
		// that the kubelet reported late is in the pods' status now.
		window := time.Since(wrote).Round(time.Second)
		// putBack may have run past the scenario's deadline, as it must:
		// the last look gets the patience of its own, as putBack does.
		lookCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.Patience)
		defer cancel()
		for _, pod := range pods {
			if !quiet[pod.Name] {
				continue // its failure is reported already
			}
			errs = append(errs, restartsNothing(lookCtx, s, pod, r, before[pod.Name], others[pod.Name], 0, fmt.Sprintf("pod %s to have left its service running from the new value of %s until the old one was back (%s)", pod.Name, file, window)))
		}
	}
	return joinErrors(errs)
}

// needsReaderPasswordRotation says why the reader's password may not be
// given a new value here.
func needsReaderPasswordRotation(w world.World) string {
	if why := needsReaderPassword(w); why != "" {
		return why
	}
	inv := w.Inventory()
	want := inventory.SecretRef{Role: inv.LDAP.Role, File: roleBindPasswordSecret}
	if inv.Rotation == nil || inv.Rotation.ReaderPassword == nil || *inv.Rotation.ReaderPassword != want {
		return fmt.Sprintf("the inventory's rotation does not let the suite write the reader's password (rotation.readerPassword: {role: %s, file: %s})", want.Role, want.File)
	}
	return ""
}

// readerRender bounds how long the copies of the reader's password take
// to follow its entry: the lldap role's agents' render interval, or the
// inventory's openbao.renderInterval if longer. That is the word for the
// main pod's agent, the platform's unit openbao-agent, whose
// configuration is no file of the contract.
func readerRender(ctx context.Context, w world.World) (time.Duration, string) {
	render, where := agentRender(ctx, w, w.Inventory().LDAP.Role)
	if stated := w.Inventory().OpenBao.Render(); stated > render {
		return stated, "the inventory's openbao.renderInterval, which the main pod's agent follows"
	}
	return render, where
}

// readerPasswordRotated writes a new reader's password into its KV entry
// and waits until the main pod's file and the role's copies all hold it:
// a main pod that rendered it once, or from another entry, keeps a
// password the directory no longer takes after a rotation. The old value
// is put back, and every copy must hold it again.
func readerPasswordRotated(ctx context.Context, s *State) error {
	sec := readerPassword(s.Inv)
	role := s.Inv.LDAP.Role
	kw, err := newFieldValue(ctx, s, role, sec)
	if err != nil {
		return err
	}
	pods, bao, data, original, want := kw.pods, kw.bao, kw.data, kw.original, kw.want
	files := map[string][]byte{}
	for _, pod := range pods {
		if files[pod.Name], err = readPodSecret(ctx, s, pod, roleBindPasswordSecret); err != nil {
			return poll.Permanent(fmt.Errorf("pod %s: %w", pod.Name, err))
		}
	}
	render, _ := readerRender(ctx, s.World)
	if err := bao.Write(ctx, sec.Path, map[string]any{"data": data}); err != nil {
		return err
	}
	s.Note("wrote a new reader's password into %s", describeField(sec))
	// The agents render a KV entry again once each render interval.
	errs := []error{readerCopiesHold(ctx, s, render+s.Patience, "the new value", func(context.Context) (string, error) { return want, nil })}
	// The deployment is left as it was found, the old value in every copy.
	restarted := map[string]bool{}
	for _, pod := range pods {
		restarted[pod.Name] = sec.Restart
	}
	errs = append(errs, putBack(ctx, s, bao, pods, kvChange{path: sec.Path, file: roleBindPasswordSecret, data: original, files: files, restarted: restarted, render: render}))
	backCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), render+s.Patience)
	defer cancel()
	errs = append(errs, readerCopiesHold(backCtx, s, render+s.Patience, describeField(sec), func(ctx context.Context) (string, error) { return fieldValue(ctx, bao, sec) }))
	return joinErrors(errs)
}

// restartsNothing watches pod's service for window (or looks once, for
// none) and fails on an exit since b, the pod's status before the write:
// no restart was due. restartFiles are the hashes of the pod's secrets
// with restart before the write. An exit while a secret with restart changed too is
// told to be for neither: inconclusive, never excused.
func restartsNothing(ctx context.Context, s *State, pod inventory.Endpoint, r *inventory.Role, b *inventory.PodStatus, restartFiles map[string]string, window time.Duration, expect string) error {
	look := func(ctx context.Context) error {
		st, err := podStatus(ctx, s, pod)
		if err != nil {
			return err
		}
		if st.UID != b.UID {
			return poll.Saw("a new pod (uid %s, was %s)", st.UID, b.UID)
		}
		if st.ExitCount() == b.ExitCount() {
			return nil
		}
		now, err := restartSecretHashes(ctx, s, pod, r)
		if err != nil {
			return err
		}
		if changed := changedFiles(restartFiles, now); len(changed) > 0 {
			return inconclusive("pod %s: its service exited (%s), and %s changed too, a secret with restart: the exit is not told to be for either", pod.Name, st.LastExit, strings.Join(changed, ", "))
		}
		return poll.Saw("its service exited (%s; %d exits, were %d), and no secret with restart changed: none was due", st.LastExit, st.ExitCount(), b.ExitCount())
	}
	probe := poll.Probe{Endpoint: podWhere(s, pod), Expect: expect, Within: window}
	if window == 0 {
		return poll.Eventually(ctx, probe, func(ctx context.Context) error {
			err := look(ctx)
			var exited *poll.Mismatch
			if errors.As(err, &exited) {
				return poll.Permanent(err) // an exit counted: waiting unsays nothing
			}
			return err // no answer, or an error of the API, is tried again
		})
	}
	return poll.Consistently(ctx, probe, look)
}

// restartedForFile waits until pod's service exits in the same pod after
// the new value of file reached the pod: its file's time in the pod, not
// the write to OpenBao, is what the restart follows. An exit before it,
// or one that a new value of another secret with restart explains
// (others: their hashes before the write), is no restart for this file:
// the latter leaves the scenario inconclusive. Where the exit says why
// (the kubelet's termination message, which podroles pod writes), a crash
// or a restart for another file is told from a restart for this one. The
// report lists every exit the wait saw, with the one it took.
func restartedForFile(ctx context.Context, s *State, pod inventory.Endpoint, r *inventory.Role, b *inventory.PodStatus, file string, wrote time.Time, others map[string]string) (*inventory.Exit, error) {
	// The restart may come before this look: a stat killed with its
	// container is tried again, in the sidecar or once the service runs.
	var times map[string]time.Time
	err := poll.Eventually(ctx, poll.Probe{Endpoint: s.World.SecretWhere(pod, file), Expect: "the time the file was written", Within: s.Patience}, func(ctx context.Context) (err error) {
		times, err = secretTimes(ctx, s, pod, []string{file})
		return err
	})
	if err != nil {
		return nil, poll.Permanent(err)
	}
	changed := times[file]
	if changed.Before(wrote.Truncate(time.Second)) {
		// A clock of the pod's behind the runner's: the write bounds it.
		changed = wrote
	}
	var seen []string
	noteExit := func(e *inventory.Exit) {
		if e != nil && (b.LastExit == nil || !e.FinishedAt.Equal(b.LastExit.FinishedAt)) && !slices.Contains(seen, e.String()) {
			seen = append(seen, e.String())
		}
	}
	expect := fmt.Sprintf("pod %s to restart its service in the same pod after %s changed there", pod.Name, file)
	var took *inventory.Exit
	err = poll.Eventually(ctx, poll.Probe{Endpoint: podWhere(s, pod), Expect: expect, Within: s.Patience}, func(ctx context.Context) error {
		st, err := podStatus(ctx, s, pod)
		if err != nil {
			return err
		}
		if st.UID != b.UID {
			return poll.Permanent(fmt.Errorf("a new pod (uid %s, was %s)", st.UID, b.UID))
		}
		noteExit(st.LastExit)
		if st.ExitCount() <= b.ExitCount() {
			return poll.Saw("%d exits still", st.ExitCount())
		}
		// Only an exit after the file changed counts. The kubelet keeps
		// seconds: an exit of that second counts.
		if st.LastExit != nil && st.LastExit.FinishedAt.Before(toPrecisionOf(changed, st.LastExit.FinishedAt)) {
			return poll.Saw("exits %s, all before %s changed in the pod at %s", strings.Join(seen, "; "), file, changed.UTC().Format(time.TimeOnly))
		}
		// The exit's own word, where the method gives one (the kubelet's
		// termination message), tells a restart for this file from a
		// crash or a restart for another.
		if err := withKubeletStop(ctx, s, pod, st.LastExit); err != nil {
			return err
		}
		_, says := st.LastExit.RestartFor()
		if why := noRestartFor(st.LastExit, file); why != "" {
			if st.ExitCount()-b.ExitCount() > 1 {
				// The kubelet keeps the last exit's word alone: an
				// earlier exit may have been the restart for this file.
				return inconclusive("its service exited %d times since the write; the last (%s) is no restart for %s, and the kubelet keeps no word of the others (exits seen: %s)", st.ExitCount()-b.ExitCount(), st.LastExit, file, strings.Join(seen, "; "))
			}
			return poll.Saw("%s", why)
		}
		if !says && len(others) > 0 {
			now, err := restartSecretHashes(ctx, s, pod, r)
			if err != nil {
				return err
			}
			if also := changedFiles(others, now); len(also) > 0 {
				// Either new value explains the exit: no verdict.
				return inconclusive("its service exited (%s), but %s changed too, a secret with restart: the exit is not told to be for %s (exits seen: %s)", st.LastExit, strings.Join(also, ", "), file, strings.Join(seen, "; "))
			}
		}
		if !says {
			// The kubelet's events said no stop, but they may have been
			// dropped: its recorder keeps a pod's first 25, then one per
			// 5 minutes.
			s.Note("pod %s: the exit says not why (no termination message), and the kubelet's events name no stop of it (they keep a pod's first 25, then one per 5 minutes): a crash after %s changed would be taken for its restart", pod.Name, file)
		}
		waitBackOff(s, pod, st)
		took = st.LastExit
		s.Note("pod %s restarted its service in the same pod after %s changed there at %s: took %s, of the exits seen: %s", pod.Name, file, changed.UTC().Format(time.TimeOnly), st.LastExit, strings.Join(seen, "; "))
		return nil
	})
	return took, err
}

// noRestartFor says why an exit is no restart for file, where the exit
// tells: a kill, a restart its word says was for other files, or a
// crash that says so; "" where it may be the restart.
func noRestartFor(e *inventory.Exit, file string) string {
	saidFor, says := e.RestartFor()
	switch {
	case e.Killed():
		return killedNoRestart(e, file)
	case says && !slices.Contains(saidFor, file):
		return fmt.Sprintf("its service restarted (%s) for %s, not %s", e, strings.Join(saidFor, ", "), file)
	case !says && e != nil && e.Message != "":
		return fmt.Sprintf("its service ended (%s), which is no restart for %s: a crash", e, file)
	}
	return ""
}

// withKubeletStop adds to an exit of the pod's service that says nothing
// of itself the kubelet's word that it stopped the service then
// (Exit.StoppedBy), which makes the exit a kill.
func withKubeletStop(ctx context.Context, s *State, pod inventory.Endpoint, e *inventory.Exit) error {
	if e == nil || e.Message != "" || e.StoppedBy != "" {
		return nil
	}
	why, err := s.World.KubeletStop(ctx, pod, world.Service, e)
	e.StoppedBy = why
	return err
}

// killedNoRestart says that an exit that was a kill (the OOM killer, a
// SIGKILL) is no restart for what; "" for any other exit.
func killedNoRestart(e *inventory.Exit, what string) string {
	if !e.Killed() {
		return ""
	}
	return fmt.Sprintf("its service was killed (%s), which is no restart for %s", e, what)
}

// restartedTogether judges the replicas of a role that restarted for one
// new value (Known Deviations: each sidecar reads it on its own, so all
// restart at about the same time): their exits at most one render
// interval and a restart's reaction apart. A replica that restarts much
// later had a sidecar that saw the value late, or restarted for another
// cause.
func restartedTogether(s *State, role string, exits map[string]*inventory.Exit, render time.Duration) error {
	if len(exits) < 2 {
		return nil
	}
	var first, last string
	for pod, e := range exits {
		if e == nil {
			return nil // an exit the kubelet gave no time: nothing to compare
		}
		if first == "" || e.FinishedAt.Before(exits[first].FinishedAt) {
			first = pod
		}
		if last == "" || e.FinishedAt.After(exits[last].FinishedAt) {
			last = pod
		}
	}
	// A loaded node renders, stops and records late: the run's patience
	// is its slack, as for every wait on the world.
	spread, bound := exits[last].FinishedAt.Sub(exits[first].FinishedAt), render+restartReaction+s.Patience
	if spread > bound {
		return fmt.Errorf("the replicas of role %s restarted %s apart (pod %s at %s, pod %s at %s), more than the agents' render interval, a restart's reaction and the patience (%s): they restart together for one new value", role, spread, first, exits[first].FinishedAt.UTC().Format(time.TimeOnly), last, exits[last].FinishedAt.UTC().Format(time.TimeOnly), bound)
	}
	s.Note("the %d replicas of role %s restarted within %s of each other (at most %s)", len(exits), role, spread, bound)
	return nil
}

// kvChange is a KV entry that a scenario changed, and what to put back:
// its data, each pod's file as it was, and the pods that restarted for
// the new value (they restart for the old one too).
type kvChange struct {
	path, file string
	data       map[string]any
	files      map[string][]byte
	restarted  map[string]bool
	// render is the agents' render interval, which bounds the wait.
	render time.Duration
}

// putBack writes a KV entry's old data again and waits until each pod's
// file holds its old value, and in a pod that restarted for the new
// value until the service exited for the old one. The next scenario then finds the deployment as
// this one found it.
func putBack(ctx context.Context, s *State, bao *openbao.Client, pods []inventory.Endpoint, c kvChange) error {
	// A scenario past its deadline still puts the value back.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.render+2*s.Patience+kubeletMaxBackOff)
	defer cancel()
	before := map[string]int{}
	for _, pod := range pods {
		if st, err := podStatus(ctx, s, pod); err == nil {
			before[pod.Name] = st.ExitCount()
		}
	}
	if err := bao.Write(ctx, c.path, map[string]any{"data": c.data}); err != nil {
		return fmt.Errorf("put back %s: %w", c.path, err)
	}
	var errs []error
	for _, pod := range pods {
		probe := poll.Probe{Endpoint: secretWhere(s, pod, c.file), Expect: fmt.Sprintf("pod %s to hold the old value of %s again", pod.Name, c.file)}
		err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			got, err := readPodSecret(ctx, s, pod, c.file)
			if err != nil {
				return err
			}
			if string(got) != string(c.files[pod.Name]) {
				return poll.Saw("the scenario's value still")
			}
			if !c.restarted[pod.Name] {
				return nil
			}
			st, err := podStatus(ctx, s, pod)
			if err != nil {
				return err
			}
			// The old value is back once a run of the service read it:
			// one that exited after the file was written (a restart for
			// it), or one that started after (a service that waited in
			// the kubelet's back-off, or whose restart for the scenario's
			// value came late). Not the write to OpenBao: the agent
			// renders the file up to an interval later. The kubelet
			// keeps seconds.
			times, err := secretTimes(ctx, s, pod, []string{c.file})
			if err != nil {
				return err
			}
			written := times[c.file]
			exitedSince := st.ExitCount() > before[pod.Name] && st.LastExit != nil && !st.LastExit.FinishedAt.Before(toPrecisionOf(written, st.LastExit.FinishedAt))
			startedSince := st.Running && !st.StartedAt.Before(toPrecisionOf(written, st.StartedAt))
			if !exitedSince && !startedSince {
				return poll.Saw("the old value, and no run of the service since it was written at %s (%d exits; %s)", written.UTC().Format(timeOfDay), st.ExitCount(), st.LastExit)
			}
			waitBackOff(s, pod, st)
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("put back %s in pod %s: %w", c.path, pod.Name, err))
		}
	}
	if len(errs) == 0 {
		s.Note("put back the old value of %s", c.path)
	}
	return joinErrors(errs)
}

// restartSecretHashes hashes the files of a pod's secrets with restart.
func restartSecretHashes(ctx context.Context, s *State, pod inventory.Endpoint, r *inventory.Role) (map[string]string, error) {
	var files []string
	for _, f := range slices.Sorted(maps.Keys(r.Secrets)) {
		if r.Secrets[f].Restart {
			files = append(files, f)
		}
	}
	out, err := secretHashes(ctx, s, pod, files)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", pod.Name, err)
	}
	return out, nil
}

// changedFiles are the files whose hash differs between two reads.
func changedFiles(before, after map[string]string) []string {
	var out []string
	for _, f := range slices.Sorted(maps.Keys(before)) {
		if after[f] != before[f] {
			out = append(out, f)
		}
	}
	return out
}
