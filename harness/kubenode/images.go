package kubenode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Containerd is the node's containerd as its users reach it: the images
// it holds and the tasks that run its pods' containers. Its methods run
// ctr on the node's socket, so they work while the node runs.
type Containerd struct{ socket string }

// Containerd reaches the node's containerd.
func (n *Node) Containerd() Containerd { return Containerd{containerdSocket(n.Dir)} }

// ctr runs containerd's ctr in the CRI's namespace, with stdin from in.
func (c Containerd) ctr(ctx context.Context, in io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", c.socket, "--namespace", "k8s.io"}, args...)...)
	if in != nil {
		cmd.Stdin = in
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Import imports an image that kubenode writes (Image) into the node's
// containerd, streaming its archive into ctr import.
func (c Containerd) Import(ctx context.Context, img Image) error {
	r, w := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := img.writeArchive(w)
		w.CloseWithError(err)
		written <- err
	}()
	_, err := c.ctr(ctx, r, "images", "import", "--snapshotter", "overlayfs", "-")
	r.Close()
	if werr := <-written; werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		return fmt.Errorf("image %s: %w", img.Ref, werr)
	}
	if err != nil {
		return fmt.Errorf("image %s: %w", img.Ref, err)
	}
	return nil
}

// ImportLocal imports images of the local container engine's store
// (make images builds them) into the node's containerd, without a
// registry: `podman save | ctr import`. The engine's store is only read.
func (c Containerd) ImportLocal(ctx context.Context, engine string, refs ...string) error {
	for _, ref := range refs {
		if err := c.importLocal(ctx, engine, ref); err != nil {
			return err
		}
	}
	return nil
}

func (c Containerd) importLocal(ctx context.Context, engine, ref string) error {
	save := exec.CommandContext(ctx, engine, "save", "--format", "oci-archive", ref)
	var saveErr strings.Builder
	save.Stderr = &saveErr
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	save.Stdout = w
	if err := save.Start(); err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("%s save %s: %w", engine, ref, err)
	}
	w.Close()
	_, importErr := c.ctr(ctx, r, "images", "import", "--snapshotter", "overlayfs", "-")
	r.Close()
	if err := save.Wait(); err != nil {
		return fmt.Errorf("%s save %s: %v: %s (make images builds it)", engine, ref, err, strings.TrimSpace(saveErr.String()))
	}
	if importErr != nil {
		return fmt.Errorf("image %s: %w", ref, importErr)
	}
	return nil
}

// SaveLocal writes an image of the local engine's store to file as an OCI
// archive: the base of an Image.
func SaveLocal(ctx context.Context, engine, ref, file string) error {
	out, err := exec.CommandContext(ctx, engine, "save", "--format", "oci-archive", "-o", file, ref).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s save %s: %v: %s (make images builds it)", engine, ref, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Images lists the images of the node's containerd.
func (c Containerd) Images(ctx context.Context) ([]string, error) {
	out, err := c.ctr(ctx, nil, "images", "ls", "-q")
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// TaskPID is the host PID of a container's process (its ID as the pod's
// status gives it, less the runtime's prefix).
func (c Containerd) TaskPID(ctx context.Context, containerID string) (int, error) {
	out, err := c.ctr(ctx, nil, "tasks", "ls")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == containerID {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("containerd runs no task %s", containerID)
}
