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

// A service that the kubelet restarts now and then (a liveness probe
// that fails at times, a memory limit at the service's use) is ready at
// most looks: the counts of ready replicas pass it. Its container's
// exits tell, and the pod supervisor says of each exit why it came: a
// restart for a new secret value is the only exit a deployment that
// stays up makes while it is judged.

// servicesStayUp judges the exits of the main container of each pod of
// each role (the service's, or the node's in a pod of the node's image):
// the last exit the kubelet keeps and the stops its events keep, then
// each exit while it watches them for the patience.
func servicesStayUp(ctx context.Context, s *State) error {
	c, err := clusterOf(s)
	if err != nil {
		return err
	}
	since := s.runStarted
	if since.IsZero() {
		since = time.Now()
	}
	var pods []inventory.Endpoint
	roleOf := map[string]string{}
	var errs []error
	for _, role := range slices.Sorted(maps.Keys(s.Inv.Roles)) {
		rolePods, err := podsOf(s.Inv, role)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, pod := range rolePods {
			pods = append(pods, pod)
			roleOf[pod.Name] = role
		}
	}
	if len(pods) == 0 {
		return joinErrors(errs)
	}
	where := fmt.Sprintf("the main containers of %d pods in namespace %s", len(pods), c.Namespace)
	var seen map[string]*inventory.PodStatus
	var stops map[string][]string
	probe := poll.Probe{Endpoint: where, Expect: "each service's history, and the kubelet's stops", Within: s.Patience}
	err = poll.Eventually(ctx, probe, func(ctx context.Context) (err error) {
		if seen, err = world.Histories(ctx, c, pods, world.Service); err != nil {
			return err
		}
		// The kubelet's word of its stops, which later exits hide from
		// the pod's record.
		stops, err = world.KubeletStops(ctx, c, pods, world.Service)
		return err
	})
	if err != nil {
		return joinErrors(append(errs, err))
	}
	// which names a pod's main container in a report.
	which := func(pod inventory.Endpoint) string {
		return fmt.Sprintf("pod %s of role %s: its container %s", pod.Name, roleOf[pod.Name], pod.Container)
	}
	for _, pod := range pods {
		fault, note := lastExitVerdict(roleService(s.Inv, roleOf[pod.Name]), seen[pod.Name], stops[pod.Name], since)
		if fault != "" {
			errs = append(errs, fmt.Errorf("%s %s", which(pod), fault))
			continue
		}
		s.Note("%s %s", which(pod), note)
	}
	if err := joinErrors(errs); err != nil {
		return err
	}
	watch := poll.Probe{Endpoint: where, Expect: fmt.Sprintf("no exit of the %d pods' main containers but a restart for a new secret value", len(pods)), Within: s.Patience}
	err = poll.Consistently(ctx, watch, func(ctx context.Context) error {
		now, err := world.Histories(ctx, c, pods, world.Service)
		if err != nil {
			return err
		}
		for _, pod := range pods {
			before, after := seen[pod.Name], now[pod.Name]
			if after.ExitCount() == before.ExitCount() {
				continue
			}
			// The first look saw no stop: any now is this exit's.
			stopped, err := world.KubeletStops(ctx, c, []inventory.Endpoint{pod}, world.Service)
			if err != nil {
				return err
			}
			// Judged from the run's start, not the watch's: a loaded
			// kubelet reports an exit seconds late.
			fault, untold, note := watchedExitVerdict(roleService(s.Inv, roleOf[pod.Name]), before, after, stopped[pod.Name], since)
			switch {
			case fault != "":
				return poll.Permanent(fmt.Errorf("%s %s", which(pod), fault))
			case untold != "":
				return inconclusive("%s %s", which(pod), untold)
			}
			s.Note("%s, while watched, %s", which(pod), note)
			seen[pod.Name] = after
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.Note("watched the main containers of %d pods for %s: none ended but to restart for a new secret value", len(pods), s.Patience)
	return nil
}

// lastExitVerdict judges a main container's last exit, the one the
// kubelet keeps, and the kubelet's stops of it in this pod that its
// events keep, for a run that began at since: a fault where they
// contradict a service that stays up, else a note of the exit. A kill by
// the kernel's OOM killer and a stop by the kubelet are faults whenever
// they came: neither is part of a right deployment's life. A crash is
// judged from the run's start only: a service may have crashed while the
// cluster started (lldap's replicas race on an empty database, Known
// Deviations), and a run judges the deployment as it runs.
func lastExitVerdict(service string, st *inventory.PodStatus, stops []string, since time.Time) (fault, note string) {
	e := st.LastExit
	restart := fmt.Sprintf("(restart %d)", st.RestartCount)
	if len(stops) > 0 {
		return fmt.Sprintf("was stopped by the kubelet in this pod %s: %s: a probe that fails at times restarts the service, ready between the stops", restart, strings.Join(stops, "; ")), ""
	}
	if st.ExitCount() == 0 || e == nil {
		return "", "never ended"
	}
	if files, ok := e.RestartFor(); ok {
		return "", fmt.Sprintf("last ended to restart for a new value of %s %s: %s", strings.Join(files, ", "), restart, e)
	}
	switch {
	case e.Reason == "OOMKilled":
		return fmt.Sprintf("was killed by the kernel's OOM killer %s: %s: its memory limit is at the service's use, and the kubelet starts it again, ready between the kills", restart, e), ""
	case service == "lldap" && st.ExitCount() == 1:
		return "", fmt.Sprintf("ended once, on its first run %s: %s; lldap's replicas may race on an empty database, and one that fails exits (Known Deviations)", restart, e)
	case e.FinishedAt.Before(since):
		return "", fmt.Sprintf("last ended before the run began at %s, %s: %s; not judged, as a crash while the cluster started may be", since.UTC().Format(time.TimeOnly), restart, e)
	}
	return fmt.Sprintf("ended since the run began at %s, not to restart for a new secret value %s: %s", since.UTC().Format(time.TimeOnly), restart, e), ""
}

// watchedExitVerdict judges the exits of a main container that came
// while it was watched (after its history before), with the kubelet's
// stops of it, for a run that began at since: a fault, or why the record
// cannot tell, else a note of the last. The kubelet keeps only the last
// exit: where more came, the others are unknown.
func watchedExitVerdict(service string, before, after *inventory.PodStatus, stops []string, since time.Time) (fault, untold, note string) {
	fault, note = lastExitVerdict(service, after, stops, since)
	if fault != "" {
		return fault, "", ""
	}
	if n := after.ExitCount() - before.ExitCount(); n > 1 {
		return "", fmt.Sprintf("ended %d times while watched, and the kubelet keeps only the last exit (%s): the others are unknown", n, after.LastExit), ""
	}
	return "", "", note
}
