package localenv

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/harness/ready"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
)

// workerRole is a role whose secrets with restart are all KV entries: a
// new read gives the same value, so that a restart of its sidecar must
// restart nothing (US1-13), which the roles of lldap and authelia, with a
// credential and a certificate that are new at each read, cannot show.
// Its service reads nothing and stays: only its pod's behaviour is under
// test.
const workerRole = "worker"

// worker is the worker role's one pod, with its sidecar.
type worker struct {
	site    *site
	openbao *openBao
}

// WithWorkerRole is a copy of node n with the worker role that the local
// environment's node has: a role of a modular service of its own, whose
// secrets with restart are all KV entries, so that a sidecar's restart
// can be shown to restart nothing (US1-13) on a cluster too. It is part
// of the test deployment, as the agents' short render interval is.
func WithWorkerRole(n *facts.Node) *facts.Node {
	c := *n
	c.PodRoles.Roles = maps.Clone(n.PodRoles.Roles)
	c.PodRoles.Roles[workerRole] = workerRoleFacts()
	c.PodRoles.Services = maps.Clone(n.PodRoles.Services)
	c.Units = maps.Clone(n.Units)
	c.ModularServices = slices.Clone(n.ModularServices)
	addModularService(&c, workerRole)
	return &c
}

// workerRoleFacts is the worker role as the node defines it: one replica
// of its own service, with its secrets.
func workerRoleFacts() facts.Role {
	one, service := 1, workerRole
	return facts.Role{Replicas: &one, Service: &service, Secrets: (*worker)(nil).secrets(), Units: []string{}}
}

// addModularService gives node n the modular service name, as NixOS's
// system.services would: a unit of its name that the node's image does
// not run, and the service's settings, empty.
func addModularService(n *facts.Node, name string) {
	n.Units[name] = facts.Unit{Enable: false}
	n.PodRoles.Services[name] = facts.Service{Environment: []string{}, Variables: map[string]string{}}
	n.ModularServices = append(n.ModularServices, name)
	slices.Sort(n.ModularServices)
}

// secrets are the worker's: a key with restart, a greeting without.
func (w *worker) secrets() map[string]facts.Secret {
	str := func(s string) *string { return &s }
	return map[string]facts.Secret{
		"api-key":  {Path: "secret/data/worker/api-key", Field: str("value"), Restart: true},
		"greeting": {Path: "secret/data/worker/greeting", Field: str("value")},
	}
}

// start starts the worker's sidecar, then its service; with
// ServiceBeforeSecrets, the service first, and its sidecar once it runs.
func (w *worker) start(ctx context.Context) error {
	s := w.site
	pod := s.workerPodName()
	sidecar := func(ctx context.Context) error {
		return w.openbao.startSidecar(ctx, pod, s.workerSecretsDir(), w.secrets())
	}
	if !s.Faults.ServiceBeforeSecrets {
		if err := sidecar(ctx); err != nil {
			return err
		}
	}
	argv, err := s.podCommand(pod, workerRole, s.workerSecretsDir(), w.secrets(), nil, []string{"sleep", "infinity"})
	if err != nil {
		return err
	}
	dir := filepath.Join(s.Dir, workerRole)
	for _, d := range []string{dir, s.workerSecretsDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	p, err := s.launch(ctx, workerRole, argv, launchOptions{dir: dir})
	if err != nil {
		return err
	}
	probe := poll.Probe{Endpoint: s.podStatusFile(pod), Expect: "the worker's service to run", Within: 30 * time.Second}
	err = poll.Eventually(ctx, probe, func(context.Context) error {
		if err := ready.Alive(p, 5); err != nil {
			return err
		}
		st, err := inventory.ReadPodStatus(s.podStatusFile(pod))
		if err != nil || st.ServicePID == 0 {
			return poll.Saw("no service yet")
		}
		return nil
	})
	if err != nil || !s.Faults.ServiceBeforeSecrets {
		return err
	}
	return sidecar(ctx)
}
