// Package ready waits until a server that a test environment started
// answers, or says why it never will. A server that exits stops the wait
// at once, with the last lines of its log.
package ready

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/fediversity/podroles/internal/poll"
)

// Server is a server an environment started: a process, or a container.
type Server interface {
	// Label names it, as in logs/NAME.log.
	Label() string
	Running() bool
	LastLines(n int) string
}

// HTTP waits until url answers 200, with cfg for HTTPS, or s dies.
func HTTP(ctx context.Context, s Server, url string, cfg *tls.Config) error {
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: cfg}}
	defer client.CloseIdleConnections()
	probe := poll.Probe{Endpoint: url, Expect: s.Label() + " to be ready", Within: 60 * time.Second}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		if err := Alive(s, 8); err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return poll.Saw("HTTP %d", resp.StatusCode)
		}
		return nil
	})
}

// TLS waits until addr completes a TLS handshake, or s dies. It checks
// readiness only, not the certificate: the suites verify.
func TLS(ctx context.Context, s Server, addr string) error {
	probe := poll.Probe{Endpoint: addr, Expect: s.Label() + " to accept TLS", Within: 20 * time.Second}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		if err := Alive(s, 5); err != nil {
			return err
		}
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: time.Second}, Config: &tls.Config{InsecureSkipVerify: true}}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

// Alive is nil while s runs, and otherwise a poll.Permanent error with the
// last n lines of its log: a wait for a server that exited is over.
func Alive(s Server, n int) error {
	if s.Running() {
		return nil
	}
	return poll.Permanent(fmt.Errorf("%s exited: %s", s.Label(), s.LastLines(n)))
}
