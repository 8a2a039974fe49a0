package checks

import (
	"fmt"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/loopback"
)

// autheliaRules judge authelia as a role (Known Deviations).
var autheliaRules = []*Rule{
	{
		ID: "PR511", Name: "authelia-loopback-host", Spec: "Known Deviations (authelia), SC-005", Severity: SeverityError, Scope: ScopeK8s,
		Doc: "A role runs authelia and fediversity.authelia.host is a loopback address.",
		check: autheliaCheck([]string{"host"}, func(a facts.Authelia) string {
			if loopback.Is(a.Host) {
				return fmt.Sprintf("fediversity.authelia.host is %q, a loopback address: the nginx of the main pod cannot reach the role there; set it to the name of the role's Service", a.Host)
			}
			return ""
		}),
	},
	{
		ID: "PR512", Name: "authelia-without-ca-file", Spec: "Known Deviations (authelia), SC-005", Severity: SeverityError, Scope: ScopeK8s,
		Doc: "A role runs authelia and fediversity.authelia.caFile is null.",
		check: autheliaCheck([]string{"caFile"}, func(a facts.Authelia) string {
			if a.CAFile == nil {
				return "fediversity.authelia.caFile is null: nginx cannot verify the role's HTTPS certificate; set it to the CA file of OpenBao's PKI engine"
			}
			return ""
		}),
	},
	{
		ID: "PR513", Name: "authelia-local-storage", Spec: "Known Deviations (authelia), SC-005", Severity: SeverityError, Scope: ScopeK8s,
		Doc: "A role runs authelia with fediversity.authelia.storage.local: a file in a pod is lost with the pod.",
		check: autheliaCheck([]string{"storage", "local"}, func(a facts.Authelia) string {
			if a.Storage.Local != nil {
				return fmt.Sprintf("fediversity.authelia.storage.local keeps logins in %s, a file of the pod that is lost with it; use fediversity.authelia.storage.postgres", a.Storage.Local.Path)
			}
			return ""
		}),
	},
	{
		ID: "PR514", Name: "authelia-without-smtp", Spec: "Known Deviations (authelia), SC-005", Severity: SeverityError, Scope: ScopeK8s,
		Doc: "A role runs authelia and fediversity.authelia.smtp is null.",
		check: autheliaCheck([]string{"smtp"}, func(a facts.Authelia) string {
			if !a.SMTP {
				return "fediversity.authelia.smtp is null: without a mail server authelia notifies through a file of the pod; set fediversity.authelia.smtp"
			}
			return ""
		}),
	},
	{
		ID: "PR515", Name: "authelia-forward-auth", Spec: "Known Deviations (authelia), SC-005", Severity: SeverityError, Scope: ScopeK8s,
		Doc: "A role runs authelia with fediversity.authelia.forwardAuth.enable.",
		check: autheliaCheck([]string{"forwardAuth", "enable"}, func(a facts.Authelia) string {
			if a.ForwardAuth.Enable {
				return "fediversity.authelia.forwardAuth.enable is true, which a role of authelia does not support; set it to false"
			}
			return ""
		}),
	},
}

// autheliaCheck makes a rule that refuses each role that runs authelia when
// problem, given the node's authelia options, says what is wrong with the
// option fediversity.authelia.<option>.
func autheliaCheck(option []string, problem func(facts.Authelia) string) func(*node, reportFunc) {
	return func(n *node, report reportFunc) {
		n.eachRoleRunning("authelia", func(name string, _ facts.Role) {
			if p := problem(n.Authelia); p != "" {
				report(role(name), at(opt(append([]string{"fediversity", "authelia"}, option...)...), roleOpt(name, "service")), "role %s runs authelia but %s", name, p)
			}
		})
	}
}
