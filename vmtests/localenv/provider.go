package vmtests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// provider is how an environment runs its servers: as local processes, or
// each in a container. Everything else (the servers, their
// configurations, the inventory) is the environment's, the same for both:
// the suites never know which ran.
type provider interface {
	// tools are the programs as the provider runs them.
	tools(im Images) (tools, error)
	// prepare makes what the servers share, before any starts.
	prepare(ctx context.Context) error
	// startPostgres starts PostgreSQL and fills it: its data folder is
	// the provider's.
	startPostgres(ctx context.Context) error
	// launch starts a server, after running opts.before where it runs.
	launch(ctx context.Context, name string, argv []string, opts startOptions) (server, error)
	// listen is the address a server listens on, for host: the address
	// the processes provider gives it, where its port is reached.
	listen(host string) string
	// reach is where one server reaches another, name, which the
	// processes provider has at host.
	reach(name, host string) string
}

// processes runs each server as a local process on its loopback address.
type processes struct{ e *Env }

func (processes) tools(Images) (tools, error)               { return findTools() }
func (processes) prepare(context.Context) error             { return nil }
func (p processes) startPostgres(ctx context.Context) error { return p.e.startPostgres(ctx) }
func (processes) listen(host string) string                 { return host }
func (processes) reach(_, host string) string               { return host }

func (p processes) launch(ctx context.Context, name string, argv []string, opts startOptions) (server, error) {
	for _, cmd := range opts.before {
		if out, err := runQuiet(ctx, cmd[0], cmd[1:]...); err != nil {
			return nil, fmt.Errorf("%s: %v: %s", filepath.Base(cmd[0]), err, lastLines(out, 5))
		}
	}
	for v, file := range opts.secretEnv {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		opts.env = append(opts.env, v+"="+strings.TrimRight(string(data), "\n"))
	}
	return p.e.start(ctx, name, argv, opts)
}

func (e *Env) launch(ctx context.Context, name string, argv []string, opts startOptions) (server, error) {
	return e.run.launch(ctx, name, argv, opts)
}

func (e *Env) listen(host string) string { return e.run.listen(host) }

func (e *Env) reach(name, host string) string { return e.run.reach(name, host) }
