package vmtests

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
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

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

// startPostgres makes a cluster in its own folder, starts it on a free
// port and fills it as the lldap role would have: its database with the
// table users, and the companion's OpenTofu state.
func (e *Env) startPostgres(ctx context.Context) error {
	cred, err := postgresUser()
	if err != nil {
		return err
	}
	if cred != nil {
		if err := traversable(e.Dir, cred); err != nil {
			return err
		}
	}
	dir := filepath.Join(e.Dir, "postgres")
	data, run := filepath.Join(dir, "data"), filepath.Join(dir, "run")
	pwfile := filepath.Join(dir, "superuser-password")
	for _, d := range []string{dir, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := writeFile(pwfile, []byte(e.secrets.pgSuper+"\n"), 0o600); err != nil {
		return err
	}
	if cred != nil {
		for _, p := range []string{dir, run, pwfile} {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
	}
	initdb := exec.CommandContext(ctx, e.tools.initdb, "-D", data, "-U", "postgres", "--pwfile", pwfile,
		"--auth", "scram-sha-256", "-E", "UTF8", "--locale", "C", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	out, err := initdb.CombinedOutput()
	os.Remove(pwfile)
	if err != nil {
		return fmt.Errorf("initdb: %v: %s", err, lastLines(string(out), 5))
	}

	p, err := e.start(ctx, "postgres", append([]string{e.tools.postgres, "-D", data}, e.postgresFlags(e.postgresAddress(), run)...),
		startOptions{dir: dir, credential: cred, stopSignal: syscall.SIGINT, detached: e.Detached})
	if err != nil {
		return err
	}
	return e.connectAndFill(ctx, p)
}

// postgresFlags are PostgreSQL's settings, listening on listen with its
// socket in run.
func (e *Env) postgresFlags(listen, run string) []string {
	return []string{"-c", "listen_addresses=" + listen, "-p", strconv.Itoa(e.pgPort),
		"-c", "unix_socket_directories=" + run, "-c", "fsync=off", "-c", "full_page_writes=off",
		// A failing statement may hold a password: never into the log.
		"-c", "log_min_error_statement=panic",
	}
}

// connectAndFill waits until PostgreSQL (p) takes the superuser on the
// environment's Postgres address, and fills it.
func (e *Env) connectAndFill(ctx context.Context, p server) error {
	super := &url.URL{Scheme: "postgres", User: url.UserPassword("postgres", e.secrets.pgSuper),
		Host: net.JoinHostPort(e.postgresAddress(), strconv.Itoa(e.pgPort)), Path: "/postgres", RawQuery: "sslmode=disable"}
	var conn *pgx.Conn
	probe := poll.Probe{Endpoint: super.Redacted(), Expect: "PostgreSQL to accept connections", Within: 30 * time.Second}
	err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
		if !p.running() {
			return poll.Permanent(fmt.Errorf("postgres exited: %s", p.lastLines(5)))
		}
		c, err := pgx.Connect(ctx, super.String())
		conn = c
		return err
	})
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return e.fillPostgres(ctx, conn, super)
}

// fillPostgres makes the roles and databases through the superuser's
// connection, writes the DSN files, and fills the lldap database as the
// role would have: the table users and the companion's OpenTofu state.
func (e *Env) fillPostgres(ctx context.Context, conn *pgx.Conn, super *url.URL) error {
	for _, s := range []struct{ what, sql string }{
		{"create role lldap", fmt.Sprintf("CREATE ROLE lldap LOGIN PASSWORD '%s'", e.secrets.pgRole)},
		{"create database lldap", "CREATE DATABASE lldap OWNER lldap"},
		// The owner of authelia's storage, whose credentials come from
		// OpenBao's database engine alone.
		{"create role authelia", "CREATE ROLE authelia NOLOGIN"},
		{"create database authelia", "CREATE DATABASE authelia OWNER authelia"},
		// OpenBao's database engine makes and drops the credentials.
		{"create role openbao", fmt.Sprintf("CREATE ROLE openbao LOGIN SUPERUSER PASSWORD '%s'", e.secrets.pgOpenBao)},
	} {
		// The statement holds a password: the error names what it does.
		if _, err := conn.Exec(ctx, s.sql); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	if err := writeFile(e.secretPath("postgres-dsn"), []byte(e.PostgresDSN()+"\n"), 0o600); err != nil {
		return err
	}
	// What the authelia suite reads authelia's storage with.
	storage := *super
	storage.Path = "/authelia"
	if err := writeFile(e.secretPath("authelia-storage-dsn"), []byte(storage.String()+"\n"), 0o600); err != nil {
		return err
	}
	db, err := pgx.Connect(ctx, e.PostgresDSN())
	if err != nil {
		return fmt.Errorf("connect as lldap: %w", err)
	}
	defer db.Close(ctx)
	statements := []string{
		// OpenTofu's pg backend, with schema_name = "lldap_provision".
		`CREATE SCHEMA lldap_provision`,
		`CREATE TABLE lldap_provision.states (id BIGSERIAL PRIMARY KEY, name TEXT UNIQUE NOT NULL, data TEXT)`,
	}
	if !e.servesLLDAP() {
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

// PostgresDSN returns the connection string of the role's database.
func (e *Env) PostgresDSN() string {
	return (&url.URL{Scheme: "postgres", User: url.UserPassword("lldap", e.secrets.pgRole),
		Host: net.JoinHostPort(e.postgresAddress(), strconv.Itoa(e.pgPort)), Path: "/lldap", RawQuery: "sslmode=disable"}).String()
}

func firstWords(sql string) string {
	if len(sql) > 40 {
		return sql[:40] + "..."
	}
	return sql
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
			return fmt.Errorf("PostgreSQL runs as user postgres, which cannot pass through %s (mode %s): give the environment a --dir it can reach, or chmod o+x %s", d, mode, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}
