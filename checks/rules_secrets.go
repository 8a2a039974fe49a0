package checks

import (
	"maps"
	"slices"
	"strings"

	"github.com/fediversity/podroles/facts"
)

// secretRules judge the roles' secrets (US2-5, US2-8, US2-12).
var secretRules = []*Rule{
	{
		ID: "PR301", Name: "secrets-without-service", Spec: "US2-5, FR-009", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role of the node's image has secrets; its pods get secrets from their own units.",
		check: secretsWithoutService,
	},
	{
		ID: "PR302", Name: "secret-not-a-file-name", Spec: "US2-5, FR-009", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A secret's name is not the name of a file in /run/secrets.",
		check: secretNotAFileName,
	},
	{
		ID: "PR303", Name: "template-with-field", Spec: "US2-8, FR-009", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A secret has a template and also a field, an encoding or a variable.",
		check: templateWithField,
	},
	{
		ID: "PR304", Name: "parameters-without-template", Spec: "US2-12, FR-009", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A secret has parameters but no template.",
		check: parametersWithoutTemplate,
	},
}

func secretsWithoutService(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if r.RunsNodeImage() && len(r.Secrets) > 0 {
			report(role(name), at(roleOpt(name, "secrets")), "role %s runs the image of the node and has secrets (%s): its pods get secrets from OpenBao through their own units; remove them or give the role a service", name, joinAnd(slices.Sorted(maps.Keys(r.Secrets))))
		}
	})
}

func secretNotAFileName(n *node, report reportFunc) {
	n.eachSecret(func(roleName, file string, _ facts.Secret) {
		if file == "" || file == "." || file == ".." || strings.ContainsAny(file, "/\x00") {
			report(secret(file), at(secretOpt(roleName, file)), "secret %q of role %s is not the name of a file in /run/secrets; name it as a file, with no / and not . or ..", file, roleName)
		}
	})
}

func templateWithField(n *node, report reportFunc) {
	n.eachSecret(func(roleName, file string, s facts.Secret) {
		if s.Template == nil {
			return
		}
		var also []string
		for _, f := range []struct {
			name string
			set  bool
		}{{"field", s.Field != nil}, {"encoding", s.Encoding != nil}, {"variable", s.Variable != nil}} {
			if f.set {
				also = append(also, f.name)
			}
		}
		if len(also) > 0 {
			var fields []facts.OptionRef
			for _, field := range also {
				fields = append(fields, secretOpt(roleName, file, field))
			}
			where := at(append(fields, secretOpt(roleName, file))...).and(secretOpt(roleName, file, "template"))
			report(secret(file), where, "secret %s of role %s has a template and also %s: a template replaces them; remove %s", file, roleName, joinAnd(also), joinAnd(also))
		}
	})
}

func parametersWithoutTemplate(n *node, report reportFunc) {
	n.eachSecret(func(roleName, file string, s facts.Secret) {
		if len(s.Parameters) > 0 && s.Template == nil {
			report(secret(file), at(secretOpt(roleName, file, "template"), secretOpt(roleName, file, "parameters"), secretOpt(roleName, file)), "secret %s of role %s has parameters but no template: parameters go with a template over the response of the engine; add the template or remove the parameters", file, roleName)
		}
	})
}
