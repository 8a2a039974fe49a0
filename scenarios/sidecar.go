package scenarios

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/oneline"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// restartReaction is the longest a pod takes to restart its service once
// a file of a secret with restart holds a new value: the local
// environment's pod supervisor looks at the files every 200ms and waits
// one more look for them to settle; a kubelet starts an exited container
// again within about a second. A window that shows that nothing restarts
// after a file changed must last at least this long.
const restartReaction = 3 * time.Second

// keepsValues is a secret whose value is the same at a new read: a field
// of a KV entry. A new sidecar writes it again as it was.
func keepsValues(sec facts.Secret) bool {
	return sec.Field != nil && sec.Template == nil && len(sec.Parameters) == 0 && strings.Contains(sec.Path, "/data/")
}

// issuesAtEachRead is a secret with restart of an engine that issues a
// new value at each read, as the PKI engine does: a template with
// parameters. A new sidecar writes a new value, and the service restarts
// (Known Deviations).
func issuesAtEachRead(sec facts.Secret) bool {
	return sec.Restart && sec.Template != nil && len(sec.Parameters) > 0
}

// sidecarCase says which half of US1-13's sidecar restart a scenario shows.
type sidecarCase int

const (
	// valuesKept: the secrets with restart all keep their values at a new
	// read, and nothing restarts.
	valuesKept sidecarCase = iota
	// newValues: a secret with restart gets a new value at each read, and
	// the service restarts.
	newValues
)

// sidecarRole finds the role of the inventory (in name order) that a
// sidecar restart scenario runs on, and the secrets it watches: for
// valuesKept, a role with secrets with restart that all keep their values
// (and those secrets); for newValues, a role with a secret with restart of
// an engine that issues a value at each read (and those secrets).
func sidecarRole(inv *inventory.Inventory, c sidecarCase) (string, []string) {
	for _, name := range slices.Sorted(maps.Keys(inv.Roles)) {
		r := inv.Roles[name]
		var watched []string
		fits := true
		for _, file := range slices.Sorted(maps.Keys(r.Secrets)) {
			sec := r.Secrets[file]
			switch {
			case c == newValues && issuesAtEachRead(sec):
				watched = append(watched, file)
			case c == valuesKept && sec.Restart && keepsValues(sec):
				watched = append(watched, file)
			case c == valuesKept && sec.Restart:
				fits = false
			}
		}
		if fits && len(watched) > 0 {
			return name, watched
		}
	}
	return "", nil
}

// needsSidecarRestart says why no sidecar restart scenario of kind can run.
func needsSidecarRestart(w world.World, c sidecarCase) string {
	inv := w.Inventory()
	if inv.OpenBao == nil {
		return "the inventory has no openbao"
	}
	role, _ := sidecarRole(inv, c)
	if role == "" {
		if c == valuesKept {
			return "no role of the inventory has secrets with restart that all keep their value at a new read (KV entries): a sidecar restart restarts a service with a secret of an engine that issues a value at each read (Known Deviations: sidecar-restart-restarts-pki)"
		}
		return "no role of the inventory has a secret with parameters and restart (an engine that issues a value at each read, as PKI does)"
	}
	for _, p := range inv.Roles[role].Pods {
		if why := w.Lacks(p, world.NeedsSidecar); why != "" {
			return why
		}
	}
	return ""
}

// renderWindow is the window of a scenario that waits on the render of a
// KV entry by the agents of the role that role picks: one render
// interval, and a restart's reaction.
func renderWindow(role func(*inventory.Inventory) string) func(context.Context, world.World) (time.Duration, string) {
	return renderWindowOf(func(ctx context.Context, w world.World) (time.Duration, string) {
		return agentRender(ctx, w, role(w.Inventory()))
	})
}

// renderWindowOf is renderWindow for the render interval that render
// reads, and where from.
func renderWindowOf(render func(context.Context, world.World) (time.Duration, string)) func(context.Context, world.World) (time.Duration, string) {
	return func(ctx context.Context, w world.World) (time.Duration, string) {
		interval, where := render(ctx, w)
		return interval + restartReaction, fmt.Sprintf("the agents' render interval %s (%s), and %s for a restart to act", interval, where, restartReaction)
	}
}

// agentRender is how often the agents of a role's pods render a KV entry
// again: the longest their configurations give (World.RenderInterval),
// and where it was read; the inventory's where a pod's cannot be read.
func agentRender(ctx context.Context, w world.World, role string) (time.Duration, string) {
	inv := w.Inventory()
	render, where := inv.OpenBao.Render(), "the inventory's openbao.renderInterval"
	r := inv.Roles[role]
	if r == nil || len(r.Pods) == 0 {
		return render, where
	}
	// A window may be asked before any step, with the run's context:
	// the read gets what a try may take.
	ctx, cancel := context.WithTimeout(ctx, poll.AnswerTime)
	defer cancel()
	var longest time.Duration
	var unread []string
	for _, pod := range r.Pods {
		d, at, err := w.RenderInterval(ctx, pod)
		switch {
		case err != nil:
			unread = append(unread, oneline.Err(err))
		case d > longest:
			longest, where = d, at
		}
	}
	if len(unread) > 0 && render > longest {
		// A pod's configuration unread: the inventory's word, if longer.
		return render, fmt.Sprintf("the inventory's openbao.renderInterval: pods' could not be read: %s", strings.Join(unread, "; "))
	}
	return longest, where
}

// sidecarRestart is what the steps of a sidecar restart scenario share.
type sidecarRestart struct {
	role    string
	watched []string
	before  map[string]podAtRestart
}

// podAtRestart is a pod's service, sidecar and watched files before its
// sidecar restarted.
type podAtRestart struct {
	service, sidecar *inventory.PodStatus
	files            map[string]string // by file, a hash of its content
}

// noteBeforeRestart is the first step of both sidecar restart scenarios.
func noteBeforeRestart(c sidecarCase) Step[sidecarRestart] {
	return Step[sidecarRestart]{Name: "note each pod's service, sidecar and secrets", Do: func(ctx context.Context, s *State, v *sidecarRestart) error {
		v.role, v.watched = sidecarRole(s.Inv, c)
		// No sidecar is restarted in a role with no pod to watch.
		pods, err := podsOf(s.Inv, v.role)
		if err != nil {
			return err
		}
		v.before = map[string]podAtRestart{}
		for _, pod := range pods {
			b, err := podNow(ctx, s, pod, v.watched)
			if err != nil {
				return poll.Permanent(fmt.Errorf("pod %s: %w", pod.Name, err))
			}
			v.before[pod.Name] = b
			s.Note("pod %s of role %s: service exited %d times, sidecar %d times; watching %s", pod.Name, v.role, b.service.ExitCount(), b.sidecar.ExitCount(), strings.Join(v.watched, ", "))
		}
		return nil
	}}
}

func podNow(ctx context.Context, s *State, pod inventory.Endpoint, files []string) (podAtRestart, error) {
	service, err := podStatus(ctx, s, pod)
	if err != nil {
		return podAtRestart{}, err
	}
	sidecar, err := sidecarStatus(ctx, s, pod)
	if err != nil {
		return podAtRestart{}, err
	}
	hashes, err := secretHashes(ctx, s, pod, files)
	if err != nil {
		return podAtRestart{}, err
	}
	return podAtRestart{service, sidecar, hashes}, nil
}

// restartSidecars is the second step of both: each pod's sidecar
// restarts. It ends once each exit is counted; the kubelet's back-off
// before the next run, which the status of a sidecar that exited 0 does
// not name, widens the steps after it.
var restartSidecars = Step[sidecarRestart]{Name: "restart each pod's sidecar", Do: func(ctx context.Context, s *State, v *sidecarRestart) error {
	var errs []error
	longest, why := time.Duration(0), ""
	for _, pod := range s.Inv.Roles[v.role].Pods {
		b := v.before[pod.Name]
		asked := restartSidecar(ctx, s, pod)
		probe := poll.Probe{Endpoint: sidecarWhere(s, pod), Expect: fmt.Sprintf("the sidecar of pod %s to end at its restart", pod.Name), Within: s.Patience}
		err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			st, err := sidecarStatus(ctx, s, pod)
			if err != nil {
				return err
			}
			if st.ExitCount() <= b.sidecar.ExitCount() {
				if asked != nil {
					return poll.Saw("%d exits still; asking it to restart: %v", st.ExitCount(), asked)
				}
				return poll.Saw("%d exits still (last: %s)", st.ExitCount(), st.LastExit)
			}
			if wait, w := backOffLeft(st, "the sidecar of pod "+pod.Name); wait > longest {
				longest, why = wait, w
			}
			return nil
		})
		errs = append(errs, err)
	}
	s.Wait(longest, why)
	return joinErrors(errs)
}}

// sidecarsRunAgain is the third step of both: each pod's sidecar runs
// again after its restart.
var sidecarsRunAgain = Step[sidecarRestart]{Name: "each pod's sidecar runs again", Do: func(ctx context.Context, s *State, v *sidecarRestart) error {
	var errs []error
	for _, pod := range s.Inv.Roles[v.role].Pods {
		probe := poll.Probe{Endpoint: sidecarWhere(s, pod), Expect: fmt.Sprintf("the sidecar of pod %s to run again after its restart", pod.Name), Within: s.Patience}
		err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			st, err := sidecarStatus(ctx, s, pod)
			if err != nil {
				return err
			}
			if !st.Running {
				if st.BackOff > 0 {
					return poll.Saw("not running again (last: %s; in a back-off of %s)", st.LastExit, st.BackOff)
				}
				return poll.Saw("not running again (last: %s)", st.LastExit)
			}
			s.Note("the sidecar of pod %s restarted (%s)", pod.Name, st.LastExit)
			return nil
		})
		errs = append(errs, err)
	}
	return joinErrors(errs)
}}

// sidecarRestartKeepsService: after a sidecar restart, the secrets with
// restart (all KV entries) keep their values and the service runs on.
func sidecarRestartKeepsService() Steps {
	return Sequence(noteBeforeRestart(valuesKept), restartSidecars, sidecarsRunAgain, Step[sidecarRestart]{
		Name: "no secret with restart changes, and the service runs on",
		Do: func(ctx context.Context, s *State, v *sidecarRestart) error {
			// The new agent renders every template once it runs, and a KV
			// template again at each render interval: a render that would
			// change a file comes at the latest one interval after the
			// restart, and a restart for it within restartReaction.
			render, where := agentRender(ctx, s.World, v.role)
			window := render + restartReaction
			pods := s.Inv.Roles[v.role].Pods
			probe := poll.Probe{Endpoint: fmt.Sprintf("the %d pods of role %s", len(pods), v.role), Expect: "no secret with restart to change and no service to restart", Within: window}
			err := poll.Consistently(ctx, probe, func(ctx context.Context) error {
				for _, pod := range pods {
					b := v.before[pod.Name]
					now, err := podNow(ctx, s, pod, v.watched)
					if err != nil {
						return err
					}
					for _, f := range v.watched {
						if now.files[f] != b.files[f] {
							return poll.Saw("pod %s: a new value of %s after the sidecar's restart, though a KV entry keeps its value", pod.Name, f)
						}
					}
					if now.service.UID != b.service.UID {
						return poll.Saw("pod %s is a new pod (uid %s, was %s) after its sidecar restarted", pod.Name, now.service.UID, b.service.UID)
					}
					if now.service.ExitCount() != b.service.ExitCount() {
						return poll.Saw("pod %s: its service exited (%s; %d exits, were %d) after its sidecar restarted, though no secret with restart changed", pod.Name, now.service.LastExit, now.service.ExitCount(), b.service.ExitCount())
					}
				}
				return nil
			})
			if err == nil {
				s.Note("for %s (the agents' render interval %s, %s; and %s for a restart to act) no pod of role %s changed %s or restarted its service", window, render, where, restartReaction, v.role, strings.Join(v.watched, ", "))
			}
			return err
		},
	})
}

// sidecarRestartRestartsService: after a sidecar restart, a secret of an
// engine that issues a value at each read holds a new value, and the
// service restarted in the same pod for it.
func sidecarRestartRestartsService() Steps {
	return Sequence(noteBeforeRestart(newValues), restartSidecars, sidecarsRunAgain, Step[sidecarRestart]{
		Name: "a new value, and the service restarted in the same pod",
		Do: func(ctx context.Context, s *State, v *sidecarRestart) error {
			var errs []error
			for _, pod := range s.Inv.Roles[v.role].Pods {
				b := v.before[pod.Name]
				probe := poll.Probe{Endpoint: podWhere(s, pod), Expect: fmt.Sprintf("pod %s to hold a new %s and restart its service in the same pod", pod.Name, strings.Join(v.watched, ", ")), Within: s.Patience}
				err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
					now, err := podNow(ctx, s, pod, v.watched)
					if err != nil {
						return err
					}
					if now.service.UID != b.service.UID {
						return poll.Permanent(fmt.Errorf("pod %s is a new pod (uid %s, was %s): the service must restart in the same pod", pod.Name, now.service.UID, b.service.UID))
					}
					var same []string
					for _, f := range v.watched {
						if now.files[f] == b.files[f] {
							same = append(same, f)
						}
					}
					if len(same) > 0 {
						return poll.Saw("the value of %s the sidecar had before its restart", strings.Join(same, ", "))
					}
					if now.service.ExitCount() <= b.service.ExitCount() {
						return poll.Saw("a new %s (a secret with parameters and restart), and the service's %d exits still", strings.Join(v.watched, ", "), now.service.ExitCount())
					}
					if err := withKubeletStop(ctx, s, pod, now.service.LastExit); err != nil {
						return err
					}
					if why := killedNoRestart(now.service.LastExit, "a new "+strings.Join(v.watched, ", ")); why != "" {
						return poll.Saw("%s", why)
					}
					s.Note("pod %s: a new %s from the restarted sidecar, and its service restarted in the same pod (%s)", pod.Name, strings.Join(v.watched, ", "), now.service.LastExit)
					return nil
				})
				errs = append(errs, err)
			}
			return joinErrors(errs)
		},
	})
}

// sidecarStatus reads what a pod reports of its sidecar: its restart
// count and when it last started; from the local environment's status
// file of it, or from the pod's status of its container secrets.
func sidecarStatus(ctx context.Context, s *State, pod inventory.Endpoint) (*inventory.PodStatus, error) {
	return s.World.Status(ctx, pod, world.Sidecar)
}

// restartSidecar restarts a pod's sidecar, as its crash would: in a
// cluster `kill 1` through exec in the container secrets, which ends the
// agent (its PID 1) and the kubelet starts it again (restartPolicy
// Always); locally, a new value in the pod's sidecarRestartFile, which the
// sidecar's supervisor restarts it for. What it returns is only for a
// report: the exec ends with the container it kills.
func restartSidecar(ctx context.Context, s *State, pod inventory.Endpoint) error {
	return s.World.RestartSidecar(ctx, pod)
}

// sidecarWhere names where sidecarStatus looks, for a probe.
func sidecarWhere(s *State, pod inventory.Endpoint) string {
	return s.World.StatusWhere(pod, world.Sidecar)
}
