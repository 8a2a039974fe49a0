package checks

import "slices"

// Rules returns every rule, in ID order.
func Rules() []*Rule { return rules }

// rules are the families' tables, each in a file of its own
// (rules_<family>.go) with its rules' functions: units (PR1xx), roles
// (PR2xx), secrets (PR3xx), ports (PR4xx), lldap (PR50x), authelia
// (PR51x) and input that no method can deploy (PR6xx).
var rules = slices.Concat(unitRules, roleRules, secretRules, portRules, lldapRules, autheliaRules, inputRules)
