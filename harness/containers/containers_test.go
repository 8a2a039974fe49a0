package containers_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/fediversity/podroles/harness/containers"
	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/harness/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestContainersPublishOnlyOnLoopback: a container whose image declares a
// port (as OpenBao's official image declares 8200) that the environment
// does not publish gets it on loopback, not on every address; and every
// port of an environment's containers is on loopback.
func TestContainersPublishOnlyOnLoopback(t *testing.T) {
	testenv.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("ARG BASE\nFROM ${BASE}\nEXPOSE 8200\n"), 0o644)
	// testcontainers builds the image, without its reaper, which Podman
	// does not run.
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	servers := os.Getenv(localenv.EnvImageServers)
	image := "localhost/podroles-exposes-8200:test"
	built, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: testcontainers.ContainerRequest{
		FromDockerfile: testcontainers.FromDockerfile{Context: dir, BuildArgs: map[string]*string{"BASE": &servers}, Repo: "localhost/podroles-exposes-8200", Tag: "test", KeepImage: true},
		Entrypoint:     []string{"true"},
	}})
	if built != nil {
		testcontainers.TerminateContainer(built)
	}
	if err != nil {
		t.Fatal(err)
	}
	group := containers.NewGroup(dir, false)
	t.Cleanup(func() { group.Down() })
	if err := group.StartNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	pc, err := group.Run(ctx, containers.Spec{Name: "declares", Image: image, Entrypoint: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	inspect, err := cli.ContainerInspect(ctx, pc.ID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for port, bindings := range inspect.Container.NetworkSettings.Ports {
		for _, b := range bindings {
			n++
			if !b.HostIP.IsLoopback() {
				t.Errorf("port %s is published on %s", port, b.HostIP)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d bindings of the declared port: %v", n, inspect.Container.NetworkSettings.Ports)
	}
	// A published address beyond loopback is refused before anything runs.
	if _, err := group.Run(ctx, containers.Spec{Name: "wide", Image: image, Entrypoint: []string{"sleep", "60"}, Publish: map[int]string{8200: "0.0.0.0"}}); err == nil || !strings.Contains(err.Error(), "no loopback address") {
		t.Errorf("publishing on 0.0.0.0: %v", err)
	}
}
