package scenarios

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// SettleStep is the step the runner adds after a disruptive scenario.
// The scenario may end on an exit that the kubelet restarts only after its
// back-off. The next scenario, or the next run, must find the deployment
// as this one found it.
const SettleStep = "every pod runs its service and sidecar again"

// settledContainer is one container the settle step waits for.
type settledContainer struct {
	pod inventory.Endpoint
	c   world.Container
}

func (c settledContainer) what() string {
	if c.c == world.Sidecar {
		return "sidecar"
	}
	return "service"
}

// settledContainers are the service and sidecar of every pod of the
// inventory's roles whose status can be read.
func settledContainers(s *State) []settledContainer {
	var out []settledContainer
	w := s.World
	for _, r := range slices.Sorted(maps.Keys(s.Inv.Roles)) {
		for _, pod := range s.Inv.Roles[r].Pods {
			if w.Lacks(pod, world.NeedsServiceStatus) == "" {
				out = append(out, settledContainer{pod, world.Service})
			}
			if w.Lacks(pod, world.NeedsSidecarStatus) == "" {
				out = append(out, settledContainer{pod, world.Sidecar})
			}
		}
	}
	return out
}

// noteBackOffs lets the settle step wait out the kubelet's back-off of
// each container that does not run now: the one its status names, or,
// where it names none yet (the container has just ended), the longest a
// kubelet may hold a container back.
func noteBackOffs(ctx context.Context, s *State) error {
	longest, who := time.Duration(0), ""
	for _, c := range settledContainers(s) {
		st, err := s.World.Status(ctx, c.pod, c.c)
		if err != nil {
			continue // the settle step says why
		}
		if wait, why := backOffLeft(st, fmt.Sprintf("the %s of pod %s", c.what(), c.pod.Name)); wait > longest {
			longest, who = wait, why
		}
	}
	s.Wait(longest, who)
	return nil
}

// backOffLeft is how long the kubelet may hold back a container that
// ended and awaits its restart, and why: the back-off its status names,
// or the longest a kubelet holds one back where it names none (in the
// moment after an exit, and through a sidecar's back-off after it exited
// 0).
func backOffLeft(st *inventory.PodStatus, what string) (time.Duration, string) {
	switch {
	case !st.AwaitsRestart():
		return 0, ""
	case st.BackOff > 0:
		return st.BackOff, fmt.Sprintf("the kubelet's back-off of %s", what)
	}
	return kubeletMaxBackOff, fmt.Sprintf("the longest back-off of a kubelet, which names none for %s (%s)", what, st.LastExit)
}

// kubeletMaxBackOff is the longest a stock kubelet holds back a
// container that ended: its crash-loop back-off doubles from 10 s up to
// 5 minutes.
const kubeletMaxBackOff = 5 * time.Minute

// podsRunAgain waits until every container of settledContainers runs.
func podsRunAgain(ctx context.Context, s *State) error {
	containers := settledContainers(s)
	probe := poll.Probe{Endpoint: fmt.Sprintf("the %d containers of the roles' pods", len(containers)), Expect: "each service and sidecar running", Within: s.Patience}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		var down []string
		for _, c := range containers {
			st, err := s.World.Status(ctx, c.pod, c.c)
			if err != nil {
				return err
			}
			if st.Running {
				continue
			}
			why := st.LastExit.String()
			if st.BackOff > 0 {
				why += fmt.Sprintf(", in a back-off of %s", st.BackOff)
			}
			down = append(down, fmt.Sprintf("the %s of pod %s does not run (%s; %s)", c.what(), c.pod.Name, why, s.World.StatusWhere(c.pod, c.c)))
		}
		if len(down) > 0 {
			return poll.Saw("%s", strings.Join(down, "; "))
		}
		return nil
	})
}
