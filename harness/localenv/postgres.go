package localenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fediversity/podroles/harness/kubenode"
	"github.com/fediversity/podroles/harness/procgroup"
	"github.com/fediversity/podroles/harness/ready"
	"github.com/fediversity/podroles/internal/poll"
)

// openTofuState is the one state the companion of lldap keeps in the
// schema lldap_provision (Known Deviations): OpenTofu's pg backend, with
// the values of the objects it made.
const openTofuState = `{"version": 4, "terraform_version": "1.8.5", "serial": 3, "lineage": "5f1a2b3c-podroles-env",
  "outputs": {}, "resources": [{"mode": "managed", "type": "lldap_user", "name": "authelia_bind",
  "provider": "provider[\"registry.opentofu.org/tasansga/lldap\"]",
  "instances": [{"schema_version": 0, "attributes": {"id": "authelia-bind", "username": "authelia-bind"}}]}]}`

// postgresUser is whom PostgreSQL runs as: it refuses root.
func postgresUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("PostgreSQL refuses to run as root, and there is no user postgres to run it as (Debian: apt-get install postgresql)")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// postgres is the PostgreSQL out of the pods: the lldap role's database,
// authelia's storage, and the database engine of OpenBao.
type postgres struct {
	site *site
	// port is the free port it listens on, at the site's Postgres
	// address.
	port int
}

// start starts PostgreSQL as the provider runs it, and fills it as the
// lldap role would have: its database with the table users, and the
// companion's OpenTofu state.
func (pg *postgres) start(ctx context.Context) error {
	p, err := pg.site.run.startPostgres(ctx, pg)
	if err != nil {
		return err
	}
	return pg.connectAndFill(ctx, p)
}

// startPostgres makes a cluster in its own folder, and starts it on pg's
// port.
func (p *processProvider) startPostgres(ctx context.Context, pg *postgres) (ready.Server, error) {
	s := p.site
	cred, err := postgresUser()
	if err != nil {
		return nil, err
	}
	dir, err := postgresDir(s.Dir, cred)
	if err != nil {
		return nil, err
	}
	data, run := filepath.Join(dir, "data"), filepath.Join(dir, "run")
	pwfile := filepath.Join(dir, "superuser-password")
	for _, d := range []string{dir, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if err := writeFile(pwfile, []byte(s.secrets.pgSuper+"\n"), 0o600); err != nil {
		return nil, err
	}
	if cred != nil {
		for _, p := range []string{dir, run, pwfile} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, err
			}
		}
	}
	initdb := exec.CommandContext(ctx, s.tools.initdb, "-D", data, "-U", "postgres", "--pwfile", pwfile,
		"--auth", "scram-sha-256", "-E", "UTF8", "--locale", "C", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	out, err := initdb.CombinedOutput()
	os.Remove(pwfile)
	if err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, procgroup.LastLines(string(out), 5))
	}
	listen := s.postgresAddress()
	if s.Cluster != nil {
		// The cluster's pods reach it on the node's address.
		listen += "," + kubenode.NodeIP
		// The pods, and the host on the node's address (the runner, which
		// connects as a role does, through the Service's endpoint).
		hba := fmt.Sprintf("# the pods of the test cluster's real node, and the host on its bridge\nhost all all %s scram-sha-256\nhost all all %s/32 scram-sha-256\n", kubenode.PodSubnet, kubenode.NodeIP)
		if err := appendFile(filepath.Join(data, "pg_hba.conf"), hba); err != nil {
			return nil, err
		}
	}
	return p.procs.Start(ctx, "postgres", append([]string{s.tools.postgres, "-D", data}, pg.flags(listen, run)...),
		procgroup.Options{Dir: dir, Credential: cred, StopSignal: syscall.SIGINT})
}

// appendFile appends text to a file that exists.
func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// flags are PostgreSQL's settings, listening on listen with its socket
// in run.
func (pg *postgres) flags(listen, run string) []string {
	return []string{"-c", "listen_addresses=" + listen, "-p", strconv.Itoa(pg.port),
		"-c", "unix_socket_directories=" + run, "-c", "fsync=off", "-c", "full_page_writes=off",
		// A failing statement may hold a password: never into the log.
		"-c", "log_min_error_statement=panic",
	}
}

// reachable is where other servers reach PostgreSQL, host:port.
func (pg *postgres) reachable() string {
	return net.JoinHostPort(pg.site.reach("postgres", pg.site.postgresAddress()), strconv.Itoa(pg.port))
}

// connectAndFill waits until PostgreSQL (p) takes the superuser on the
// environment's Postgres address, and fills it.
func (pg *postgres) connectAndFill(ctx context.Context, p ready.Server) error {
	super := &url.URL{Scheme: "postgres", User: url.UserPassword("postgres", pg.site.secrets.pgSuper),
		Host: net.JoinHostPort(pg.site.postgresAddress(), strconv.Itoa(pg.port)), Path: "/postgres", RawQuery: "sslmode=disable"}
	var conn *pgx.Conn
	// A container runs initdb first.
	probe := poll.Probe{Endpoint: super.Redacted(), Expect: "PostgreSQL to accept connections", Within: time.Minute}
	err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
		if err := ready.Alive(p, 5); err != nil {
			return err
		}
		c, err := pgx.Connect(ctx, super.String())
		conn = c
		return err
	})
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return pg.fill(ctx, conn, super)
}

// clusterAutheliaDatabase is the database of the cluster's authelia.
const clusterAutheliaDatabase = "authelia_cluster"

// fill makes the roles and databases through the superuser's
// connection, writes the DSN files, and fills the lldap database as the
// role would have: the table users and the companion's OpenTofu state.
func (pg *postgres) fill(ctx context.Context, conn *pgx.Conn, super *url.URL) error {
	s := pg.site
	for _, s := range []struct{ what, sql string }{
		{"create role lldap", fmt.Sprintf("CREATE ROLE lldap LOGIN PASSWORD '%s'", s.secrets.pgRole)},
		{"create database lldap", "CREATE DATABASE lldap OWNER lldap"},
		// The owner of authelia's storage, whose credentials come from
		// OpenBao's database engine alone.
		{"create role authelia", "CREATE ROLE authelia NOLOGIN"},
		{"create database authelia", "CREATE DATABASE authelia OWNER authelia"},
		// The storage of the cluster's authelia: its own, since the two
		// authelias' storage keys differ (they are the local
		// environment's and the node's secrets).
		{"create database " + clusterAutheliaDatabase, "CREATE DATABASE " + clusterAutheliaDatabase + " OWNER authelia"},
		// OpenBao's database engine makes and drops the credentials.
		{"create role openbao", fmt.Sprintf("CREATE ROLE openbao LOGIN SUPERUSER PASSWORD '%s'", s.secrets.pgOpenBao)},
		pg.autheliaStatic(),
	} {
		if s.what == "" {
			continue
		}
		// The statement holds a password: the error names what it does.
		if _, err := conn.Exec(ctx, s.sql); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	if err := writeFile(s.secretPath("postgres-dsn"), []byte(pg.dsn()+"\n"), 0o600); err != nil {
		return err
	}
	// What the authelia suite reads authelia's storage with.
	for file, database := range map[string]string{"authelia-storage-dsn": "authelia", "authelia-cluster-storage-dsn": clusterAutheliaDatabase} {
		storage := *super
		storage.Path = "/" + database
		if err := writeFile(s.secretPath(file), []byte(storage.String()+"\n"), 0o600); err != nil {
			return err
		}
	}
	db, err := pgx.Connect(ctx, pg.dsn())
	if err != nil {
		return fmt.Errorf("connect as lldap: %w", err)
	}
	defer db.Close(ctx)
	statements := []string{
		// OpenTofu's pg backend, with schema_name = "lldap_provision".
		`CREATE SCHEMA lldap_provision`,
		`CREATE TABLE lldap_provision.states (id BIGSERIAL PRIMARY KEY, name TEXT UNIQUE NOT NULL, data TEXT)`,
	}
	if !s.servesLLDAP() {
		// The part of lldap's own schema that the suites read; a real
		// lldap makes its own.
		statements = append(statements,
			`CREATE TABLE users (user_id TEXT PRIMARY KEY, email TEXT NOT NULL, display_name TEXT, creation_date TIMESTAMP NOT NULL DEFAULT now())`,
			`INSERT INTO users (user_id, email, display_name) VALUES ('admin', 'admin@example.com', 'Administrator'), ('authelia-bind', 'authelia-bind@example.com', 'authelia-bind')`)
	}
	for _, sql := range statements {
		if _, err := db.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", firstWords(sql), err)
		}
	}
	if _, err := db.Exec(ctx, `INSERT INTO lldap_provision.states (name, data) VALUES ('default', $1)`, openTofuState); err != nil {
		return fmt.Errorf("insert the OpenTofu state: %w", err)
	}
	return nil
}

// autheliaStatic makes, where a test asks for it, a credential of
// authelia's storage that never expires (no VALID UNTIL, or the one the
// test gives, such as infinity), acting as its
// owner as the database engine's do.
func (pg *postgres) autheliaStatic() struct{ what, sql string } {
	if !pg.site.Faults.AutheliaStaticCredential {
		return struct{ what, sql string }{}
	}
	validUntil := ""
	if v := pg.site.Faults.AutheliaStaticValidUntil; v != "" {
		validUntil = " VALID UNTIL '" + strings.ReplaceAll(v, "'", "''") + "'"
	}
	return struct{ what, sql string }{"create role " + autheliaStaticUser,
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'%s IN ROLE authelia; ALTER ROLE %s SET role = 'authelia'`, autheliaStaticUser, pg.site.secrets.pgAutheliaStatic, validUntil, autheliaStaticUser)}
}

// autheliaStaticUser is the credential of AutheliaStaticCredential.
const autheliaStaticUser = "authelia_static"

// dsn is the connection string of the lldap role's database.
func (pg *postgres) dsn() string {
	return (&url.URL{Scheme: "postgres", User: url.UserPassword("lldap", pg.site.secrets.pgRole),
		Host: net.JoinHostPort(pg.site.postgresAddress(), strconv.Itoa(pg.port)), Path: "/lldap", RawQuery: "sslmode=disable"}).String()
}

func firstWords(sql string) string {
	if len(sql) > 40 {
		return sql[:40] + "..."
	}
	return sql
}

// postgresDir makes the folder of PostgreSQL's data and socket: DIR/postgres
// where PostgreSQL's user reaches it. As root, PostgreSQL runs as the user
// postgres (it refuses root), which may not pass through the
// environment's folder: `mktemp -d` makes it 0700, and the environment
// never loosens a folder of the user's. Then the folder is one of its
// own in the system's temporary folder, which every user passes
// through, owned by postgres and closed to others, and DIR/postgres is a
// link to it, which env down removes with it (removePostgresDir).
func postgresDir(envDir string, cred *syscall.Credential) (string, error) {
	dir := filepath.Join(envDir, "postgres")
	if cred == nil || traversable(envDir, cred) == nil {
		return dir, nil
	}
	if err := traversable(os.TempDir(), cred); err != nil {
		return "", fmt.Errorf("%w, nor through the system's temporary folder", err)
	}
	// Made the owner's alone, and given to PostgreSQL's user with what
	// it holds.
	outside, err := os.MkdirTemp("", postgresDirPrefix)
	if err != nil {
		return "", err
	}
	if err := os.Symlink(outside, dir); err != nil {
		os.Remove(outside)
		return "", err
	}
	return outside, nil
}

// postgresDirPrefix starts the name of a PostgreSQL folder outside the
// environment's, so that only such a folder is ever removed through the
// link.
const postgresDirPrefix = "podroles-postgres-"

// removePostgresDir removes the PostgreSQL folder that DIR/postgres links
// to, once PostgreSQL is stopped, and the link; a folder inside DIR is
// the user's to remove with DIR.
func removePostgresDir(envDir string) error {
	link := filepath.Join(envDir, "postgres")
	target, err := os.Readlink(link)
	if err != nil {
		return nil // not a link: inside, or never made
	}
	if !strings.HasPrefix(filepath.Base(target), postgresDirPrefix) || filepath.Dir(target) != filepath.Clean(os.TempDir()) {
		return fmt.Errorf("%s links to %s, which env up did not make: remove it yourself", link, target)
	}
	if err := os.RemoveAll(target); err != nil {
		return err
	}
	return os.Remove(link)
}

// traversable checks that the user of cred can reach dir: PostgreSQL runs
// as that user and needs its data folder.
func traversable(dir string, cred *syscall.Credential) error {
	for d := dir; ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		mode := info.Mode().Perm()
		ok := mode&0o001 != 0 || st.Uid == cred.Uid && mode&0o100 != 0 || st.Gid == cred.Gid && mode&0o010 != 0
		if !ok {
			return fmt.Errorf("PostgreSQL runs as user postgres, which cannot pass through %s (mode %s)", d, mode)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
