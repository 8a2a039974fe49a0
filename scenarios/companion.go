package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/report"
	"github.com/fediversity/podroles/scenarios/world"
)

// The companion of a role (US1-14) applies once and then sleeps: a
// container of a pod cannot end without the kubelet starting it again,
// and it applies again only when it restarts (Known Deviations). It ends
// only with its service, whose restart for a secret stops it too. So an
// end of the companion that no end of its service explains is a crash
// or a program that ends after its apply, which the kubelet's restarts
// then hide from a look at the pod's phase.

// needsCompanion is the Skip of companion-stays-running: a cluster, and
// a role of the inventory with a companion.
func needsCompanion(w world.World) string {
	return needsRoles(w, companionRoles, "with a companion")
}

// companionRoles are the roles of the inventory whose node asks them for
// a companion, in name order.
func companionRoles(inv *inventory.Inventory) []string {
	var out []string
	for _, name := range serviceRoles(inv) {
		if inv.Facts.PodRoles.Roles[name].Companion {
			out = append(out, name)
		}
	}
	return out
}

// companionStaysRunning judges each pod of each role with a companion by
// the kubelet's record of its two containers. A stop of both may be
// recorded one container at a time, so each pod is watched for at least
// its grace period.
func companionStaysRunning(ctx context.Context, s *State) error {
	c, err := clusterOf(s)
	if err != nil {
		return err
	}
	var errs []error
	for _, role := range companionRoles(s.Inv) {
		pods, err := podsOf(s.Inv, role)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, pod := range pods {
			window := s.Patience
			if h, err := c.Companion(ctx, pod); err == nil {
				window = max(window, stopGrace(h)+2*time.Second)
			}
			probe := poll.Probe{Endpoint: fmt.Sprintf("pod %s/%s (containers %s and %s)", c.Namespace, pod.Name, pod.Container, plan.ContainerCompanion),
				Expect: fmt.Sprintf("a companion that ended only with its service (role %s)", role), Within: window}
			errs = append(errs, poll.Eventually(ctx, probe, func(ctx context.Context) error {
				h, err := c.Companion(ctx, pod)
				if err != nil {
					return err
				}
				note, err := companionVerdict(role, pod, h, time.Now())
				if err == nil {
					s.Note("%s", note)
				}
				return err
			}))
		}
	}
	return joinErrors(errs)
}

// stopGrace is how far apart the ends of one stop of both containers may
// be: the pod's grace period, and at least two of the kubelet's whole
// seconds.
func stopGrace(h *world.CompanionHistory) time.Duration { return max(h.Grace, 2*time.Second) }

// companionVerdict judges one pod's companion from its history and its
// service's, at now: a note when it stands as the spec says, else why
// not. Ends of the two within stopGrace are one stop. The kubelet keeps
// only a container's last end: an end that the service's newer one
// hides is inconclusive, never a pass, and of the ends before the last,
// only their count is judged (a companion that crashed alone once, and
// a service that restarted alone once, balance).
func companionVerdict(role string, pod inventory.Endpoint, h *world.CompanionHistory, now time.Time) (string, error) {
	comp, svc := h.Companion, h.Service
	where := fmt.Sprintf("pod %s of role %s: container %s", pod.Name, role, plan.ContainerCompanion)
	grace := stopGrace(h)
	ended, svcEnded := comp.ExitCount(), svc.ExitCount()
	if ended == 0 {
		if !comp.Running {
			return "", poll.Saw("%s not running yet", where)
		}
		return fmt.Sprintf("%s runs since %s and never ended", where, comp.StartedAt.UTC().Format(time.TimeOnly)), nil
	}
	last, svcLast := comp.LastExit, svc.LastExit
	// The kubelet records a stop of both one container at a time: while
	// the companion's end is younger than the grace, its service's may
	// still come.
	settling := last != nil && now.Sub(last.FinishedAt) < grace
	if ended > svcEnded {
		if settling {
			return "", poll.Saw("%s ended at %s, its service not since: its service's end may still be recorded", where, last.FinishedAt.UTC().Format(time.TimeOnly))
		}
		return "", poll.Permanent(fmt.Errorf("%s ended %s, its service (container %s) %s: it ended without its service, and the companion sleeps after its apply and ends only with its service (Known Deviations); its last end: %s",
			where, report.Count(ended, "time"), pod.Container, report.Count(svcEnded, "time"), last))
	}
	if last == nil || svcLast == nil {
		return "", inconclusive("%s ended %s, its service %s, and the kubelet keeps no record of the last end of one of them (%s; its service's: %s)",
			where, report.Count(ended, "time"), report.Count(svcEnded, "time"), last, svcLast)
	}
	if gap := last.FinishedAt.Sub(svcLast.FinishedAt).Abs(); gap <= grace {
		state := "runs again"
		if !comp.Running {
			state = "waits for the kubelet to start it again"
		}
		return fmt.Sprintf("%s ended %s, its service %s; its last end (%s) came with its service's (%s), within %s, and it %s",
			where, report.Count(ended, "time"), report.Count(svcEnded, "time"), last, svcLast, grace, state), nil
	}
	if last.FinishedAt.Before(svcLast.StartedAt.Add(grace)) {
		// The service ran again and ended since: an end of it that came
		// with the companion's is no longer on record.
		return "", inconclusive("%s last ended at %s, and its service ended again since (%s, a run that started at %s): the kubelet keeps only the last end of each, and whether the companion's came with one of its service's is not on record",
			where, last.FinishedAt.UTC().Format(time.TimeOnly), svcLast, svcLast.StartedAt.UTC().Format(time.TimeOnly))
	}
	if settling {
		return "", poll.Saw("%s ended at %s, its service last at %s: its service's end may still be recorded", where, last.FinishedAt.UTC().Format(time.TimeOnly), svcLast.FinishedAt.UTC().Format(time.TimeOnly))
	}
	return "", poll.Permanent(fmt.Errorf("%s ended without its service: its last end, %s, is %s from its service's last end (%s), beyond %s, and its service ran on through it; the companion sleeps after its apply and ends only with its service (Known Deviations)",
		where, last, last.FinishedAt.Sub(svcLast.FinishedAt).Abs(), svcLast, grace))
}
