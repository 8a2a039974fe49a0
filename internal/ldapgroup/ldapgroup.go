// Package ldapgroup reads a group's members from a directory laid out as
// lldap's. Its groups are under the base, their members DNs in member or
// uniqueMember. The
// suites and the stand-in of lldap-publish-roles read a group the same
// way, so that what one publishes the other can compare.
package ldapgroup

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-ldap/ldap/v3"
)

// Members are the DNs of the members of the group cn=group under baseDN,
// sorted. A search that finds no such group, or several, is an error.
func Members(conn *ldap.Conn, baseDN, group string) ([]string, error) {
	found, err := conn.Search(ldap.NewSearchRequest(baseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 2, 10, false,
		fmt.Sprintf("(cn=%s)", ldap.EscapeFilter(group)), []string{"member", "uniqueMember"}, nil))
	if err != nil {
		return nil, err
	}
	if len(found.Entries) != 1 {
		return nil, &CountError{Group: group, BaseDN: baseDN, Found: len(found.Entries)}
	}
	e := found.Entries[0]
	members := append(e.GetAttributeValues("member"), e.GetAttributeValues("uniqueMember")...)
	slices.Sort(members)
	return slices.Compact(members), nil
}

// CountError is a search for a group that found none, or several.
type CountError struct {
	Group, BaseDN string
	Found         int
}

func (e *CountError) Error() string {
	return fmt.Sprintf("%d groups cn=%s under %s", e.Found, e.Group, e.BaseDN)
}

// UIDs are the user names of member DNs (the value of a first RDN uid=),
// sorted; a DN of another form stays whole.
func UIDs(dns []string) []string {
	out := make([]string, 0, len(dns))
	for _, dn := range dns {
		name := dn
		if parsed, err := ldap.ParseDN(dn); err == nil && len(parsed.RDNs) > 0 {
			if a := parsed.RDNs[0].Attributes; len(a) == 1 && strings.EqualFold(a[0].Type, "uid") {
				name = a[0].Value
			}
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// List is how a list of members is published in one KV field: the names
// joined by commas, sorted.
func List(names []string) string { return strings.Join(names, ",") }

// ParseList reads a published list back, sorted.
func ParseList(s string) []string {
	var out []string
	for _, name := range strings.Split(s, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
