package scenarios

import (
	"context"
	"errors"
	"fmt"

	"github.com/fediversity/podroles/internal/lldap"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// The lldap-http suite: logins at lldap's HTTP API through the Service and
// at each pod, and a token of one replica accepted by every other (SC-003).
// It speaks lldap's documented API (POST /auth/simple/login, then
// /api/graphql with the token as bearer) and runs only where the inventory
// says the role runs lldap: this project's own machines cannot install
// lldap, and slapd stands in for it there.
var lldapHTTPSuite = &Suite{
	Name: "lldap-http",
	Doc:  "logins at lldap's HTTP API through the Service and at each pod; a token of one replica works at every other",
	Scenarios: []*Scenario{
		{
			Name: "login-through-service",
			Spec: []string{"SC-003"},
			Doc:  "the admin logs in at lldap's HTTP API through the role's Service",
			Skip: needsLLDAP,
			Uses: usesNothing,
			Steps: Checks(Check{Name: "log in at the Service", Do: func(ctx context.Context, s *State) error {
				_, err := lldapLogin(ctx, s, *s.Inv.Roles[s.Inv.LDAP.Role].Service)
				return err
			}}),
		},
		{
			Name: "login-at-each-pod",
			Spec: []string{"SC-003"},
			Doc:  "the admin logs in at each pod of the role",
			Skip: needsLLDAP,
			Uses: usesNothing,
			Steps: Checks(Check{Name: "log in at each pod", Do: func(ctx context.Context, s *State) error {
				pods, err := podsOf(s.Inv, s.Inv.LDAP.Role)
				if err != nil {
					return err
				}
				for _, pod := range pods {
					if _, err := lldapLogin(ctx, s, pod); err != nil {
						return fmt.Errorf("pod %s: %w", pod.Name, err)
					}
				}
				return nil
			}}),
		},
		{
			Name: "token-accepted-by-other-replica",
			Spec: []string{"SC-003"},
			Doc:  "a token from one replica is accepted by every other",
			Skip: func(w world.World) string {
				inv := w.Inventory()
				if why := needsLLDAP(w); why != "" {
					return why
				}
				return needsTwoReplicas(w, inv.LDAP.Role)
			},
			Uses: usesNothing,
			Steps: Sequence(
				Step[lldapToken]{Name: "log in at the first pod", Do: func(ctx context.Context, s *State, v *lldapToken) error {
					pods, err := podsOfReplicas(s.Inv, s.Inv.LDAP.Role)
					if err != nil {
						return err
					}
					v.pods = pods
					v.token, err = lldapLogin(ctx, s, pods[0])
					return err
				}},
				Step[lldapToken]{Name: "every other pod accepts the token", Do: func(ctx context.Context, s *State, v *lldapToken) error {
					// Each replica, not the second only: a third that
					// signs with another key refuses every token but its
					// own. Every refusal is named.
					var errs []error
					for _, pod := range v.pods[1:] {
						errs = append(errs, lldapWhoAmI(ctx, s, pod, v.pods[0].Name, v.token))
					}
					return joinErrors(errs)
				}},
			),
		},
	},
}

// lldapToken is what the steps of token-accepted-by-other-replica share.
type lldapToken struct {
	pods  []inventory.Endpoint
	token string
}

// needsTwoReplicas says why a role has no second replica to show: the
// node plans one; or, where the plan is not known, the inventory lists
// one pod.
func needsTwoReplicas(w world.World, role string) string {
	inv := w.Inventory()
	planned := plannedReplicas(inv.Facts, role)
	switch {
	case planned >= 0 && planned < 2:
		return fmt.Sprintf("node %s plans %d replica of role %s: no other replica", inv.Node, planned, role)
	case planned < 0 && len(inv.Roles[role].Pods) == 1:
		return "the role has one pod"
	}
	return ""
}

// podsOfReplicas are the Running pods of a role that the plan gives two
// replicas or more: fewer than two fails the scenario.
func podsOfReplicas(inv *inventory.Inventory, role string) ([]inventory.Endpoint, error) {
	pods, err := podsOf(inv, role)
	if err != nil {
		return nil, err
	}
	if len(pods) < 2 {
		planned := plannedReplicas(inv.Facts, role)
		return nil, poll.Permanent(fmt.Errorf("role %s has 1 Running pod (%d planned): no other replica to accept its token", role, planned))
	}
	return pods, nil
}

func needsLLDAP(w world.World) string {
	inv := w.Inventory()
	if inv.LDAP == nil {
		return "the inventory has no ldap contract"
	}
	role := inv.LDAP.Role
	if service := roleService(inv, role); service != "lldap" {
		return fmt.Sprintf("the node's role %s runs %s, not lldap: lldap's HTTP API is not there", role, service)
	}
	if r := inv.Roles[role]; r != nil && r.StandIn != "" {
		return fmt.Sprintf("the pods of role %s run %s standing in for lldap (the inventory's standIn): lldap's HTTP API is not there", role, r.StandIn)
	}
	if inv.LDAP.HTTPPort == 0 || inv.LDAP.AdminUser == "" || inv.LDAP.AdminPasswordFile == "" {
		return "the inventory's ldap has no httpPort, adminUser and adminPasswordFile"
	}
	return ""
}

// lldapLogin logs the inventory's admin in at endpoint and returns the
// token.
func lldapLogin(ctx context.Context, s *State, at inventory.Endpoint) (string, error) {
	l := s.Inv.LDAP
	password, err := inventory.ReadSecret(l.AdminPasswordFile)
	if err != nil {
		return "", poll.Permanent(err)
	}
	c, err := lldapClient(at, l.HTTPPort)
	if err != nil {
		return "", err
	}
	var token string
	err = poll.Eventually(ctx, poll.Probe{Endpoint: c.Addr + "/auth/simple/login (" + at.Name + ")", Expect: "a login of " + l.AdminUser + " with a token", Within: s.Patience}, func(ctx context.Context) error {
		var err error
		token, err = c.Login(ctx, l.AdminUser, password)
		return sawRefusal(err)
	})
	if err == nil {
		s.Note("%s: %s logged in", at.Name, l.AdminUser)
	}
	return token, err
}

// lldapWhoAmI asks endpoint's GraphQL API for the admin with the token
// that pod from gave.
func lldapWhoAmI(ctx context.Context, s *State, at inventory.Endpoint, from, token string) error {
	l := s.Inv.LDAP
	c, err := lldapClient(at, l.HTTPPort)
	if err != nil {
		return err
	}
	return poll.Eventually(ctx, poll.Probe{Endpoint: c.Addr + "/api/graphql (" + at.Name + ")", Expect: "the token of pod " + from + " to be accepted", Within: s.Patience}, func(ctx context.Context) error {
		var out struct {
			User struct {
				ID string `json:"id"`
			} `json:"user"`
		}
		err := c.GraphQL(ctx, token, `query($id: String!) { user(userId: $id) { id } }`, map[string]any{"id": l.AdminUser}, &out)
		if err != nil {
			return sawRefusal(err)
		}
		if out.User.ID != l.AdminUser {
			return poll.Saw("user %q", out.User.ID)
		}
		s.Note("%s accepted the token of pod %s", at.Name, from)
		return nil
	})
}

// lldapClient is a client of lldap's HTTP API at endpoint.
func lldapClient(at inventory.Endpoint, port int) (*lldap.Client, error) {
	addr, err := world.Addr(at, port)
	if err != nil {
		return nil, err
	}
	return lldap.New("http://" + addr), nil
}

// sawRefusal reports what lldap answered, where it answered, as seen.
func sawRefusal(err error) error {
	var le *lldap.Error
	if errors.As(err, &le) {
		if le.Message != "" {
			return poll.Saw("HTTP %d: %s", le.Status, le.Message)
		}
		return poll.Saw("HTTP %d", le.Status)
	}
	return err
}

// roleService names what the node says a role runs: its service, or the
// node's image.
func roleService(inv *inventory.Inventory, role string) string {
	if inv.Facts == nil {
		return "nothing the inventory's facts name"
	}
	r, ok := inv.Facts.PodRoles.Roles[role]
	switch {
	case !ok:
		return "nothing: the node has no such role"
	case r.RunsNodeImage():
		return "the node's image"
	}
	return *r.Service
}
