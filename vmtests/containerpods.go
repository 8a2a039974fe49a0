package vmtests

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/fediversity/podroles/scenarios"
)

// The pods of the environment as containers: the same servers and the
// same configuration as the processes provider, with the paths of the
// images (Debian's layout, which the official PostgreSQL and HAProxy
// images share for what is used here).

const (
	containerConfDir  = "/etc/podroles"
	containerSlapdDir = "/var/lib/podroles-slapd"
)

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
		name: "postgres", image: e.Images.Postgres, script: script, user: "postgres",
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

// startDirectoryContainers runs the two slapd replicas, each in its
// container, published on its pod's address.
func (e *Env) startDirectoryContainers(ctx context.Context) error {
	tlsDir := filepath.Join(e.Dir, "tls")
	conf := e.slapdConfig(containerSlapdDir, containerConfDir+"/tls", "/etc/ldap/schema", "/usr/lib/ldap")
	ldif := e.directoryLDIF()
	// A reader is read once: each container gets its own.
	files := func() []testcontainers.ContainerFile {
		files := []testcontainers.ContainerFile{
			{Reader: strings.NewReader(conf), ContainerFilePath: containerConfDir + "/slapd.conf", FileMode: 0o600},
			{Reader: strings.NewReader(ldif), ContainerFilePath: containerConfDir + "/directory.ldif", FileMode: 0o600},
		}
		for name, mode := range map[string]int64{"ca.pem": 0o644, "server.pem": 0o644, "server.key": 0o600} {
			files = append(files, testcontainers.ContainerFile{HostFilePath: filepath.Join(tlsDir, name), ContainerFilePath: containerConfDir + "/tls/" + name, FileMode: mode})
		}
		return files
	}
	script := fmt.Sprintf(`set -e
mkdir -p %[1]s/data
slapadd -f %[2]s/slapd.conf -l %[2]s/directory.ldif
exec slapd -d stats -f %[2]s/slapd.conf -h "ldap://:%[3]d/ ldaps://:%[4]d/"`, containerSlapdDir, containerConfDir, PortLDAP, PortLDAPS)
	for i := range replicas {
		pod := e.podAddress(i)
		if _, err := e.runContainer(ctx, containerSpec{
			name: fmt.Sprintf("slapd-%d", i), image: e.Images.Slapd, script: script, files: files(),
			publish: map[int]string{PortLDAP: pod, PortLDAPS: pod},
			wait:    &tlsReady{addr: net.JoinHostPort(pod, strconv.Itoa(PortLDAPS))},
		}); err != nil {
			return err
		}
	}
	return nil
}

// startServiceContainer runs HAProxy as the role's Service, in front of
// the replicas' containers on the environment's network.
func (e *Env) startServiceContainer(ctx context.Context) error {
	var pods []string
	for _, c := range e.containers {
		for i := range replicas {
			if c.Name == fmt.Sprintf("slapd-%d", i) {
				ip, err := c.c.ContainerIP(ctx)
				if err != nil {
					return fmt.Errorf("the address of %s: %w", c.Name, err)
				}
				pods = append(pods, ip)
			}
		}
	}
	ports := map[int]string{PortLDAPS: e.serviceAddress()}
	if e.PlainPortOnService {
		ports[PortLDAP] = e.serviceAddress()
	}
	_, err := e.runContainer(ctx, containerSpec{
		name: "haproxy", image: e.Images.HAProxy, script: "exec haproxy -db -f " + containerConfDir + "/haproxy.cfg",
		files:   []testcontainers.ContainerFile{{Reader: strings.NewReader(e.haproxyConfig("*", pods)), ContainerFilePath: containerConfDir + "/haproxy.cfg", FileMode: 0o644}},
		publish: ports,
		wait:    &tlsReady{addr: net.JoinHostPort(e.serviceAddress(), strconv.Itoa(PortLDAPS))},
	})
	return err
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
