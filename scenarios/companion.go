package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan"
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
// the kubelet's record of its two containers.
func companionStaysRunning(ctx context.Context, s *State) error {
	return eachServicePod(ctx, s, companionRoles(s.Inv), "a companion that ended only with its service", func(ctx context.Context, c *world.Cluster, role string, pod inventory.Endpoint) error {
		h, err := c.Companion(ctx, pod)
		if err != nil {
			return err
		}
		note, err := companionVerdict(role, pod, h)
		if err == nil {
			s.Note("%s", note)
		}
		return err
	})
}

// companionVerdict judges one pod's companion from its history and its
// service's: a note when it stands as the spec says, else why not. Ends
// of the two within the pod's grace period are one stop. The kubelet
// keeps only a container's last end, so an older end that the service's
// newer one hides is inconclusive, never a pass.
func companionVerdict(role string, pod inventory.Endpoint, h *world.CompanionHistory) (string, error) {
	comp, svc := h.Companion, h.Service
	where := fmt.Sprintf("pod %s of role %s: container %s", pod.Name, role, plan.ContainerCompanion)
	ended, svcEnded := comp.ExitCount(), svc.ExitCount()
	if ended == 0 {
		if !comp.Running {
			return "", poll.Saw("%s not running yet", where)
		}
		return fmt.Sprintf("%s runs since %s and never ended", where, comp.StartedAt.UTC().Format(time.TimeOnly)), nil
	}
	if ended > svcEnded {
		return "", poll.Permanent(fmt.Errorf("%s ended %s, its service (container %s) %s: it ended without its service, and the companion sleeps after its apply and ends only with its service (Known Deviations); its last end: %s",
			where, times(ended), pod.Container, times(svcEnded), comp.LastExit))
	}
	last, svcLast := comp.LastExit, svc.LastExit
	if last == nil || svcLast == nil {
		return "", inconclusive("%s ended %s, its service %s, and the kubelet keeps no record of the last end of one of them (%s; its service's: %s)",
			where, times(ended), times(svcEnded), last, svcLast)
	}
	if gap := last.FinishedAt.Sub(svcLast.FinishedAt).Abs(); gap <= h.Grace {
		state := "runs again"
		if !comp.Running {
			state = "waits for the kubelet to start it again"
		}
		return fmt.Sprintf("%s ended %s, its service %s; its last end (%s) came with its service's (%s), within the pod's grace of %s, and it %s",
			where, times(ended), times(svcEnded), last, svcLast, h.Grace, state), nil
	}
	if last.FinishedAt.Before(svcLast.StartedAt) {
		// The service ran again and ended since: the end that came with
		// the companion's is no longer on record.
		return "", inconclusive("%s last ended at %s, and its service ended again since (%s, a run that started at %s): the kubelet keeps only the last end of each, and whether the companion's came with one of its service's is not on record",
			where, last.FinishedAt.UTC().Format(time.TimeOnly), svcLast, svcLast.StartedAt.UTC().Format(time.TimeOnly))
	}
	return "", poll.Permanent(fmt.Errorf("%s ended without its service: its last end, %s, is %s from its service's last end (%s), beyond the pod's grace of %s, and its service ran on through it; the companion sleeps after its apply and ends only with its service (Known Deviations)",
		where, last, last.FinishedAt.Sub(svcLast.FinishedAt).Abs(), svcLast, h.Grace))
}

// times says how often: "once", "3 times".
func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
