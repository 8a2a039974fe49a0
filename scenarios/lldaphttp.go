package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/fediversity/podroles/scenarios/inventory"
)

// The lldap-http suite: logins at lldap's HTTP API through the Service and
// at each pod, and a token of one replica accepted by the other (SC-003).
// It speaks lldap's documented API (POST /auth/simple/login, then
// /api/graphql with the token as bearer) and runs only where the inventory
// says the role runs lldap: this project's own machines cannot install
// lldap, and slapd stands in for it there.
func init() {
	register(&Suite{
		Name: "lldap-http",
		Doc:  "logins at lldap's HTTP API through the Service and at each pod; a token of one replica works at the other",
		Scenarios: []*Scenario{
			{
				Name: "login-through-service",
				Spec: []string{"SC-003"},
				Doc:  "the admin logs in at lldap's HTTP API through the role's Service",
				Skip: needsLLDAP,
				Steps: []Step{{Name: "log in at the Service", Do: func(ctx context.Context, s *State) error {
					_, err := lldapLogin(ctx, s, *s.Inv.Roles[s.Inv.LDAP.Role].Service)
					return err
				}}},
			},
			{
				Name: "login-at-each-pod",
				Spec: []string{"SC-003"},
				Doc:  "the admin logs in at each pod of the role",
				Skip: needsLLDAP,
				Steps: []Step{{Name: "log in at each pod", Do: func(ctx context.Context, s *State) error {
					for _, pod := range s.Inv.Roles[s.Inv.LDAP.Role].Pods {
						if _, err := lldapLogin(ctx, s, pod); err != nil {
							return fmt.Errorf("pod %s: %w", pod.Name, err)
						}
					}
					return nil
				}}},
			},
			{
				Name: "token-accepted-by-other-replica",
				Spec: []string{"SC-003"},
				Doc:  "a token from one replica is accepted by the other",
				Skip: func(inv *inventory.Inventory) string {
					if why := needsLLDAP(inv); why != "" {
						return why
					}
					if len(inv.Roles[inv.LDAP.Role].Pods) < 2 {
						return "the role has one pod"
					}
					return ""
				},
				Steps: []Step{
					{Name: "log in at the first pod", Do: func(ctx context.Context, s *State) error {
						token, err := lldapLogin(ctx, s, s.Inv.Roles[s.Inv.LDAP.Role].Pods[0])
						s.Values["token"] = token
						return err
					}},
					{Name: "the second pod accepts the token", Do: func(ctx context.Context, s *State) error {
						return lldapWhoAmI(ctx, s, s.Inv.Roles[s.Inv.LDAP.Role].Pods[1], s.Values["token"].(string))
					}},
				},
			},
		},
	})
}

func needsLLDAP(inv *inventory.Inventory) string {
	if inv.LDAP == nil {
		return "the inventory has no ldap contract"
	}
	r := inv.Roles[inv.LDAP.Role]
	if r.Server != inventory.ServerLLDAP {
		return fmt.Sprintf("role %s runs %q, not lldap: lldap's HTTP API is not there", inv.LDAP.Role, r.Server)
	}
	if inv.LDAP.HTTPPort == 0 || inv.LDAP.AdminUser == "" || inv.LDAP.AdminPasswordFile == "" {
		return "the inventory's ldap has no httpPort, adminUser and adminPasswordFile"
	}
	return ""
}

// httpClient never goes through a proxy: the admin's password is sent.
var httpClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}

// lldapLogin logs the inventory's admin in at endpoint and returns the
// token.
func lldapLogin(ctx context.Context, s *State, at inventory.Endpoint) (string, error) {
	l := s.Inv.LDAP
	password, err := inventory.ReadSecret(l.AdminPasswordFile)
	if err != nil {
		return "", Permanent(err)
	}
	body, _ := json.Marshal(map[string]string{"username": l.AdminUser, "password": password})
	addr, err := dialAddr(at, l.HTTPPort)
	if err != nil {
		return "", err
	}
	url := fmt.Sprintf("http://%s/auth/simple/login", addr)
	var token string
	err = Eventually(ctx, Probe{Endpoint: url + " (" + at.Name + ")", Expect: "a login of " + l.AdminUser + " with a token", Within: s.Patience}, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := httpClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var out struct {
			Token string `json:"token"`
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &out) != nil || out.Token == "" {
			return Saw("HTTP %d", resp.StatusCode)
		}
		token = out.Token
		return nil
	})
	if err == nil {
		s.Note("%s: %s logged in", at.Name, l.AdminUser)
	}
	return token, err
}

// lldapWhoAmI asks endpoint's GraphQL API for the admin with token.
func lldapWhoAmI(ctx context.Context, s *State, at inventory.Endpoint, token string) error {
	l := s.Inv.LDAP
	addr, err := dialAddr(at, l.HTTPPort)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("http://%s/api/graphql", addr)
	body, _ := json.Marshal(map[string]string{"query": fmt.Sprintf(`{ user(userId: %q) { id } }`, l.AdminUser)})
	return Eventually(ctx, Probe{Endpoint: url + " (" + at.Name + ")", Expect: "the token of the other replica to be accepted", Within: s.Patience}, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := httpClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var out struct {
			Data struct {
				User struct {
					ID string `json:"id"`
				} `json:"user"`
			} `json:"data"`
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &out) != nil || out.Data.User.ID != l.AdminUser {
			return Saw("HTTP %d", resp.StatusCode)
		}
		s.Note("%s accepted the token of the other replica", at.Name)
		return nil
	})
}
