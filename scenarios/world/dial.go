package world

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
)

// Addr is where the runner connects for a port of a pod or Service: its
// port-forward, or its own address. A port that no port-forward reaches
// is a poll.Permanent error, saying why.
func Addr(e inventory.Endpoint, port int) (string, error) {
	addr, ok := e.Dial(port)
	switch {
	case !ok && e.Unreachable != "":
		return "", poll.Permanent(fmt.Errorf("%s: port %d is not reachable: %s", e.Name, port, e.Unreachable))
	case !ok:
		return "", poll.Permanent(fmt.Errorf("%s: port %d is not one of its ports, so no port-forward reaches it", e.Name, port))
	}
	return addr, nil
}

// dialTimeout bounds a connection's setup: a port that does not answer
// is retried by the caller's poll, not waited on here.
const dialTimeout = 5 * time.Second

// dial connects to Addr: both worlds reach a port the same way, the
// inventory's Endpoint saying how.
func dial(ctx context.Context, e inventory.Endpoint, port int) (net.Conn, error) {
	addr, err := Addr(e, port)
	if err != nil {
		return nil, err
	}
	return (&net.Dialer{Timeout: dialTimeout}).DialContext(ctx, "tcp", addr)
}
