// Command coredns is CoreDNS with the plugins the test cluster's DNS
// uses and no others: it answers for cluster.local from the API server
// (kubernetes), on the address it is bound to (bind), and logs. There is
// no forward plugin: a name outside the cluster is refused, never asked
// of another server.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
)

// directives are the plugins in CoreDNS's own order.
var directives = []string{"bind", "errors", "log", "kubernetes"}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
