package localenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/fediversity/podroles/harness/procgroup"
	"github.com/fediversity/podroles/harness/ready"
)

// processProvider runs each server as a local process on its loopback
// address, in a process group of the environment's own.
type processProvider struct {
	site  *site
	procs *procgroup.Group
}

func newProcessProvider(s *site) *processProvider {
	return &processProvider{site: s, procs: procgroup.New(s.Dir, s.Detached)}
}

func (*processProvider) tools(Images) (tools, error)   { return findTools() }
func (*processProvider) prepare(context.Context) error { return nil }
func (*processProvider) listen(host string) string     { return host }
func (*processProvider) reach(_, host string) string   { return host }

// down stops the processes, then removes PostgreSQL's folder where it was
// outside the environment's.
func (p *processProvider) down() error {
	return errors.Join(p.procs.Stop(), removePostgresDir(p.site.Dir))
}

func (p *processProvider) stop(name string) error {
	proc := p.procs.Find(name)
	if proc == nil {
		return fmt.Errorf("env: no server %s", name)
	}
	return proc.Stop(stopGrace)
}

func (p *processProvider) launch(ctx context.Context, name string, argv []string, opts launchOptions) (ready.Server, error) {
	for _, cmd := range opts.before {
		if out, err := runQuiet(ctx, cmd[0], cmd[1:]...); err != nil {
			return nil, fmt.Errorf("%s: %v: %s", filepath.Base(cmd[0]), err, procgroup.LastLines(out, 5))
		}
	}
	env := opts.env
	for v, file := range opts.secretEnv {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		env = append(env, v+"="+strings.TrimRight(string(data), "\n"))
	}
	return p.procs.Start(ctx, name, argv, procgroup.Options{Dir: opts.dir, Env: env, StopSignal: opts.stopSignal})
}

// runQuiet runs a tool to its end and returns what it printed.
func runQuiet(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
