package plancmd_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/cmd/internal/clitest"
	"github.com/fediversity/podroles/cmd/internal/nodecmd"
	"github.com/fediversity/podroles/cmd/internal/plancmd"
	"github.com/fediversity/podroles/internal/fixture"
	"github.com/fediversity/podroles/internal/nixtest"
	"github.com/fediversity/podroles/plan"
)

// repo is a file of the repository: no assertion here names a path.
func repo(t *testing.T, path string) string { return filepath.Join(fixture.RepoRoot(t), path) }

// run runs plan, with check beside it, under a root of their own, as
// podroles' main does.
func run(t *testing.T, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(t, func(ios *cli.Streams) []*cobra.Command {
		return append(nodecmd.Commands(ios), plancmd.NewCmd(ios))
	}, args...)
}

// Run takes its options and streams, and needs no cobra: plan's objects
// as a caller of the package sees them.
func TestRunWithoutCobra(t *testing.T) {
	var out, errOut bytes.Buffer
	io := &cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	nix := cli.SourceOptions{Nix: nixtest.Nix(t)}
	err := plancmd.Run(context.Background(), &plancmd.Options{IO: io, Sources: nix, Args: []string{repo(t, "examples/directory.nix")}, Format: "json",
		Plan: plan.Options{Namespace: "ns"}, ServiceImages: []string{"lldap=registry.example/lldap:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"kind": "Deployment"`) || !strings.Contains(out.String(), `"namespace": "ns"`) {
		t.Errorf("plan:\n%s", out.String())
	}
	if err := plancmd.Run(context.Background(), &plancmd.Options{IO: io, Format: "json", ServiceImages: []string{"lldap"}}); err == nil || err.Error() != `--service-image "lldap": write SERVICE=IMAGE` {
		t.Errorf("a bad --service-image: %v", err)
	}
}

// TestPlanRefusesWhatCheckRefusesTogether: two nodes whose objects
// collide (PR614) are refused by plan as by check of the same nodes, and
// each alone is planned.
func TestPlanRefusesWhatCheckRefusesTogether(t *testing.T) {
	shop, worker := repo(t, "testdata/rules/PR614-shop.nix"), repo(t, "testdata/rules/PR614-shop-worker.nix")
	if r := run(t, "check", shop, worker); r.Code != cli.ExitFailed || !strings.Contains(r.Out, "PR614") {
		t.Fatalf("check: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	r := run(t, "plan", shop, worker)
	if r.Code != cli.ExitCantRun || r.Out != "" || !strings.Contains(r.ErrOut, "node shop has 1 error, first PR614 role worker: ") || strings.Count(strings.TrimSpace(r.ErrOut), "\n") > 0 {
		t.Errorf("plan of both: exit %d, stdout %d bytes\n%s", r.Code, len(r.Out), r.ErrOut)
	}
	for _, node := range []string{shop, worker} {
		if r := run(t, "plan", node); r.Code != cli.ExitOK {
			t.Errorf("plan %s alone: exit %d\n%s", node, r.Code, r.ErrOut)
		}
	}
}

// TestPlanNodeImages: --node-image names each node's image; a bare image
// is for a plan of one node only, and a node not planned is refused.
func TestPlanNodeImages(t *testing.T) {
	mastodon, directory := repo(t, "examples/mastodon.nix"), repo(t, "examples/directory.nix")
	r := run(t, "plan", mastodon, directory, "--node-image", "mastodon=reg/mastodon:1", "--node-image", "directory=reg/directory:2")
	if r.Code != cli.ExitOK || !strings.Contains(r.Out, "image: reg/mastodon:1") || !strings.Contains(r.Out, "image: reg/directory:2") || strings.Contains(r.Out, "mastodon:latest") {
		t.Errorf("two nodes, two images: exit %d\n%s", r.Code, r.ErrOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{mastodon, directory, "--node-image", "reg/mastodon:1"}, "--node-image reg/mastodon:1: 2 nodes are planned (directory, mastodon); name the node: --node-image NODE=IMAGE"},
		{[]string{mastodon, "--node-image", "peertube=reg/p:1"}, "--node-image peertube=reg/p:1: no node peertube is planned; the nodes are mastodon"},
		{[]string{mastodon, "--node-image", "mastodon=a:1", "--node-image", "mastodon=b:1"}, "node mastodon has an image already"},
	} {
		r := run(t, append([]string{"plan"}, c.args...)...)
		if r.Code != cli.ExitCantRun || !strings.Contains(r.ErrOut, c.want) {
			t.Errorf("%q: exit %d\n%s", c.args, r.Code, r.ErrOut)
		}
	}
	if r := run(t, "plan", mastodon, "--node-image", "reg/mastodon:1"); r.Code != cli.ExitOK || !strings.Contains(r.Out, "image: reg/mastodon:1") {
		t.Errorf("one node, a bare image: exit %d\n%s", r.Code, r.ErrOut)
	}
}

// TestPlanRefusesImagesItCannotUse: an image reference that a runtime
// would refuse, and a sidecar image for nodes that run no sidecar, are
// refused by the flag that gave them.
func TestPlanRefusesImagesItCannotUse(t *testing.T) {
	mastodon, directory := repo(t, "examples/mastodon.nix"), repo(t, "examples/directory.nix")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{mastodon, "--node-image", "Not A Ref!!"}, `--node-image Not A Ref!!: "Not A Ref!!" is no image reference`},
		{[]string{directory, "--service-image", "lldap=Bad Ref"}, `--service-image lldap=Bad Ref: "Bad Ref" is no image reference`},
		{[]string{directory, "--sidecar-image", "openbao/Open Bao"}, `--sidecar-image: "openbao/Open Bao" is no image reference`},
		{[]string{mastodon, "--sidecar-image", "openbao/openbao:2"}, "--sidecar-image openbao/openbao:2: no requested role of the nodes has secrets"},
	} {
		r := run(t, append([]string{"plan"}, c.args...)...)
		if r.Code != cli.ExitCantRun || !strings.Contains(r.ErrOut, c.want) || r.Out != "" {
			t.Errorf("%q: exit %d\n%s", c.args, r.Code, r.ErrOut)
		}
	}
	r := run(t, "plan", directory, "--node-image", "registry.example.org:5000/directory:1", "--sidecar-image", "openbao/openbao@sha256:"+strings.Repeat("0", 64))
	if r.Code != cli.ExitOK || !strings.Contains(r.Out, "image: registry.example.org:5000/directory:1") {
		t.Errorf("good references: exit %d\n%s", r.Code, r.ErrOut)
	}
}
