package vmtests

import (
	"context"
	"strings"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// PostgreSQL's container: from its official image (or one laid out the
// same), with its data inside, filled from the host as the processes
// provider fills its own.

// containerConfDir is where PostgreSQL's container gets its files.
const containerConfDir = "/etc/podroles"

// startPostgresContainer runs PostgreSQL in its container, published on
// the environment's Postgres address, and fills it as the processes
// provider does. The container starts as root only to hand the superuser's
// password file to postgres and delete it once initdb has read it.
func (e *Env) startPostgresContainer(ctx context.Context) error {
	const data, pwfile = "/var/lib/postgresql/podroles", "/tmp/superuser-password"
	initdb := []string{"initdb", "-D", data, "-U", "postgres", "--pwfile", pwfile, "--auth", "scram-sha-256", "-E", "UTF8", "--locale", "C", "--no-sync"}
	postgres := append([]string{"postgres", "-D", data}, e.postgresFlags("*", "/tmp")...)
	// setpriv execs as postgres (su and runuser would stay as a parent
	// in the way of the stop signal).
	asPostgres := "setpriv --reuid postgres --regid postgres --init-groups -- "
	script := strings.Join([]string{
		"set -e",
		"install -d -o postgres -g postgres -m 0700 " + data,
		"install -o postgres -m 0600 " + containerConfDir + "/superuser-password " + pwfile,
		"rm -f " + containerConfDir + "/superuser-password",
		asPostgres + shellQuote(initdb) + " >/dev/null",
		"rm -f " + pwfile,
		// Connections come through the engine's port publishing, from
		// the network.
		"echo 'host all all all scram-sha-256' >> " + data + "/pg_hba.conf",
		"exec " + asPostgres + shellQuote(postgres),
	}, "\n")
	p, err := e.runContainer(ctx, containerSpec{
		name: "postgres", image: e.Images.imageOf(e.Images.Postgres), entrypoint: []string{"sh", "-c", script}, user: "root",
		files:   []testcontainers.ContainerFile{{Reader: strings.NewReader(e.secrets.pgSuper + "\n"), ContainerFilePath: containerConfDir + "/superuser-password", FileMode: 0o600}},
		publish: map[int]string{e.pgPort: e.postgresAddress()},
		// A fast shutdown: with SIGTERM, PostgreSQL waits for clients.
		stopSignal: "SIGINT",
		wait:       wait.ForLog("database system is ready to accept connections"),
	})
	if err != nil {
		return err
	}
	return e.connectAndFill(ctx, p)
}

// shellQuote joins argv into one command line for sh, each word quoted.
func shellQuote(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
