package vmtests

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/fediversity/podroles/scenarios"
)

// PostgreSQL's container: from its official image (or one laid out the
// same), with its data inside, filled from the host as the processes
// provider fills its own.

// containerConfDir is where PostgreSQL's container gets its files.
const containerConfDir = "/etc/podroles"

// startPostgresContainer runs PostgreSQL as user postgres in its
// container, published on the environment's Postgres address, and fills
// it as the processes provider does.
func (e *Env) startPostgresContainer(ctx context.Context) error {
	port := strconv.Itoa(e.pgPort)
	script := `set -e
export PGDATA=/var/lib/postgresql/podroles
initdb -D "$PGDATA" -U postgres --pwfile ` + containerConfDir + `/superuser-password --auth scram-sha-256 -E UTF8 --locale C --no-sync >/dev/null
# Connections come through the engine's port publishing, from the network.
echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
exec postgres -D "$PGDATA" -c listen_addresses='*' -p ` + port + ` -c unix_socket_directories=/tmp -c fsync=off -c full_page_writes=off -c log_min_error_statement=panic`
	_, err := e.runContainer(ctx, containerSpec{
		name: "postgres", image: e.Images.Postgres, entrypoint: []string{"sh", "-c", script}, user: "postgres",
		// The password file is read by initdb in the container, which is
		// the environment's alone.
		files:   []testcontainers.ContainerFile{{Reader: strings.NewReader(e.secrets.pgSuper + "\n"), ContainerFilePath: containerConfDir + "/superuser-password", FileMode: 0o644}},
		publish: map[int]string{e.pgPort: e.postgresAddress()},
		// A fast shutdown: with SIGTERM, PostgreSQL waits for clients.
		stopSignal: "SIGINT",
		wait:       wait.ForLog("database system is ready to accept connections"),
	})
	if err != nil {
		return err
	}
	super := &url.URL{Scheme: "postgres", User: url.UserPassword("postgres", e.secrets.pgSuper),
		Host: net.JoinHostPort(e.postgresAddress(), port), Path: "/postgres", RawQuery: "sslmode=disable"}
	var conn *pgx.Conn
	probe := scenarios.Probe{Endpoint: super.Redacted(), Expect: "PostgreSQL to accept connections", Within: 30 * time.Second}
	if err := scenarios.Eventually(ctx, probe, func(ctx context.Context) error {
		c, err := pgx.Connect(ctx, super.String())
		conn = c
		return err
	}); err != nil {
		return err
	}
	defer conn.Close(ctx)
	return e.fillPostgres(ctx, conn, super)
}

// tlsReady waits until a published address completes a TLS handshake:
// from the host, with no exec into the container (each exec leaves
// conmon processes behind under Podman).
type tlsReady struct{ addr string }

func (t *tlsReady) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	probe := scenarios.Probe{Endpoint: t.addr, Expect: "a TLS handshake", Within: 30 * time.Second}
	return scenarios.Eventually(ctx, probe, func(ctx context.Context) error {
		if st, err := target.State(ctx); err == nil && !st.Running {
			return scenarios.Permanent(fmt.Errorf("the container exited (%s, code %d)", st.Status, st.ExitCode))
		}
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: time.Second}, Config: &tls.Config{InsecureSkipVerify: true}} // readiness only: the suites verify
		conn, err := d.DialContext(ctx, "tcp", t.addr)
		if err != nil {
			return err
		}
		return conn.Close()
	})
}

// hasLeftovers says the engine still holds something of the environment
// in dir, or cannot say.
func hasLeftovers(ctx context.Context, dir string) bool {
	left, err := EngineLeftovers(ctx, dir)
	return err != nil || len(left) > 0
}

// shellQuote joins argv into one command line for sh, each word quoted.
func shellQuote(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
