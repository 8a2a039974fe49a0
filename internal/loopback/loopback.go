// Package loopback tells whether a host names the machine it is read on.
// The checks judge the node's hosts with it, and the suites a pod's.
package loopback

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Is reports whether host names this machine: localhost and its
// subdomains, a loopback address, or the unspecified address.
func Is(host string) bool {
	_, ok := Host(host)
	return ok
}

// Host is Is, with the address when host is one (in any form the
// resolver reads); addr is invalid for a name.
func Host(host string) (addr netip.Addr, ok bool) {
	h := strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if h == "" || h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "localhost.localdomain" || h == "ip6-localhost" || h == "ip6-loopback" {
		return netip.Addr{}, true
	}
	addr, err := netip.ParseAddr(h)
	if err != nil {
		// The resolver also reads the short IPv4 forms: 127.1, 127.0.1,
		// 2130706433.
		addr, err = shortIPv4(h)
	}
	if err != nil {
		return netip.Addr{}, false
	}
	return addr, addr.IsLoopback() || addr.IsUnspecified()
}

// shortIPv4 reads the forms inet_aton accepts with fewer than four decimal
// parts, the last part filling the remaining bytes.
func shortIPv4(s string) (netip.Addr, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, fmt.Errorf("not an IPv4 address")
	}
	var b [4]byte
	for i, p := range parts {
		last := i == len(parts)-1
		bits := 8
		if last {
			bits = 8 * (4 - i)
		}
		n, err := strconv.ParseUint(p, 10, bits)
		if err != nil || p == "" {
			return netip.Addr{}, fmt.Errorf("not an IPv4 address")
		}
		if !last {
			b[i] = byte(n)
			continue
		}
		for j := 3; j >= i; j-- {
			b[j] = byte(n)
			n >>= 8
		}
	}
	return netip.AddrFrom4(b), nil
}
