package loopback

import "testing"

func TestIs(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST.": true, "127.0.0.1": true, "127.1.2.3": true, "::1": true, "[::1]": true,
		"0.0.0.0": true, "lldap.localhost": true, "": true, "127.1": true, "127.0.1": true, "2130706433": true,
		"10.1": false, "128.1": false, "127.256": true, "1.2.3.4.5": false, "127..1": false,
		"directory-lldap.ns.svc.cluster.local": false, "10.0.0.1": false, "localhost.example.org": false,
	} {
		if got := Is(host); got != want {
			t.Errorf("Is(%q) = %v", host, got)
		}
	}
}
