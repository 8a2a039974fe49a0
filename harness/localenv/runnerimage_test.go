package localenv

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRunnerImage: the runner's image that make images built, found as a
// podroles run outside make finds it (the record), holds the static
// podroles and a CA bundle alone, runs it as an unprivileged user, and
// runs with no network, as the suites' Job runs it.
func TestRunnerImage(t *testing.T) {
	im, err := ImagesFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if im.Runner == "" {
		t.Skip("no runner image recorded: make images builds it, and make test runs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	engine := ContainerEngine()
	out, err := exec.CommandContext(ctx, engine, "image", "inspect", im.Runner).Output()
	if err != nil {
		t.Fatalf("%s image inspect %s: %v", engine, im.Runner, err)
	}
	var inspected []struct {
		Config struct {
			User       string
			Entrypoint []string
		}
		RootFS struct{ Layers []string }
	}
	if err := json.Unmarshal(out, &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("inspect %s: %v", im.Runner, err)
	}
	c := inspected[0].Config
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/bin/podroles"}) || len(inspected[0].RootFS.Layers) != 2 {
		t.Errorf("%s: user %q, entrypoint %q, %d layers; want 65532:65532, /bin/podroles, the binary and the CA bundle", im.Runner, c.User, c.Entrypoint, len(inspected[0].RootFS.Layers))
	}
	for _, args := range [][]string{{"--version"}, {"scenarios", "list"}} {
		argv := append([]string{"run", "--rm", "--network", "none", "--read-only", im.Runner}, args...)
		out, err := exec.CommandContext(ctx, engine, argv...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", engine, strings.Join(argv, " "), err, out)
		}
		if want := map[string]string{"--version": "podroles version ", "scenarios": "  data-outside-pod "}[args[0]]; !strings.Contains(string(out), want) {
			t.Errorf("podroles %s in the image: %q, want %q", strings.Join(args, " "), out, want)
		}
	}
}
