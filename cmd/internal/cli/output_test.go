package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func writeReport(path string) error {
	return WriteOutput(context.Background(), path, io.Discard, func(w io.Writer) error {
		_, err := io.WriteString(w, "report\n")
		return err
	})
}

func TestOutputNewAndRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "new.xml")
	if err := writeReport(fresh); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(fresh); info.Mode().Perm() != 0o644 {
		t.Errorf("a new report has mode %v, want 0644", info.Mode().Perm())
	}
	private := filepath.Join(dir, "private.xml")
	os.WriteFile(private, []byte("old"), 0o600)
	if err := writeReport(private); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(private)
	if data, _ := os.ReadFile(private); string(data) != "report\n" || info.Mode().Perm() != 0o600 {
		t.Errorf("a file of mode 0600: now %q, mode %v", data, info.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("files left beside the reports: %v", entries)
	}
}

// TestOutputFollowsLinks: -o link writes where the link points, and the
// link stays a link, also when its target does not exist yet.
func TestOutputFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "reports"), 0o755)
	target := filepath.Join(dir, "reports", "check.xml")
	os.WriteFile(target, []byte("old"), 0o640)
	link := filepath.Join(dir, "latest.xml")
	os.Symlink("reports/check.xml", link)
	dangling := filepath.Join(dir, "next.xml")
	os.Symlink("reports/next.xml", dangling)
	for _, l := range []string{link, dangling} {
		if err := writeReport(l); err != nil {
			t.Fatal(err)
		}
		if info, err := os.Lstat(l); err != nil || info.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link", l)
		}
	}
	for _, f := range []string{target, filepath.Join(dir, "reports", "next.xml")} {
		if data, _ := os.ReadFile(f); string(data) != "report\n" {
			t.Errorf("%s holds %q", f, data)
		}
	}
	if info, _ := os.Stat(target); info.Mode().Perm() != 0o640 {
		t.Errorf("the link's target lost its mode: %v", info.Mode().Perm())
	}
}

// TestOutputFIFO: a FIFO is written in place, not replaced by a file.
func TestOutputFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "report.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		data, _ := io.ReadAll(f)
		got <- string(data)
	}()
	if err := writeReport(fifo); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "report\n" {
		t.Errorf("the FIFO's reader got %q", s)
	}
	if info, _ := os.Lstat(fifo); info.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO became %v", info.Mode())
	}
}

// TestOutputDevice: -o onto a device (a null device made for the test,
// never the machine's /dev/null) writes to it and leaves it a device.
func TestOutputDevice(t *testing.T) {
	null := filepath.Join(t.TempDir(), "null")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, int(1<<8|3)); err != nil {
		t.Skipf("mknod (needs root, on a file system without nodev): %v", err)
	}
	before, _ := os.Lstat(null)
	if err := writeReport(null); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Lstat(null)
	if after.Mode()&os.ModeCharDevice == 0 || after.Mode() != before.Mode() || !os.SameFile(before, after) {
		t.Errorf("the device %v became %v", before.Mode(), after.Mode())
	}
}

// TestOutputRefusedBeforeWork: a folder, or a file in a missing folder,
// is refused by CheckOutput, naming the path given, never a temporary
// file.
func TestOutputRefusedBeforeWork(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		dir:                               "output " + dir + ": is a folder",
		filepath.Join(dir, "no", "r.xml"): "output " + filepath.Join(dir, "no", "r.xml") + ": folder " + filepath.Join(dir, "no") + " does not exist",
	}
	for path, want := range cases {
		err := CheckOutput(path)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
		wrote := false
		err = WriteOutput(context.Background(), path, io.Discard, func(io.Writer) error { wrote = true; return nil })
		if err == nil || wrote || strings.Contains(err.Error(), ".r.xml.") {
			t.Errorf("%s: wrote %v, %v", path, wrote, err)
		}
	}
	failing := filepath.Join(dir, "kept.xml")
	os.WriteFile(failing, []byte("old"), 0o644)
	err := WriteOutput(context.Background(), failing, io.Discard, func(io.Writer) error { return errors.New("disk full") })
	if data, _ := os.ReadFile(failing); err == nil || string(data) != "old" {
		t.Errorf("a failed write: %v, file %q", err, data)
	}
}

// TestOutputToAFIFO: a FIFO with no reader does not hang the command
// past its context (an interrupt); a reader that comes later gets the
// report.
func TestOutputToAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := WriteOutput(ctx, fifo, io.Discard, func(w io.Writer) error { _, err := io.WriteString(w, "report\n"); return err })
	if err == nil || !strings.Contains(err.Error(), "output "+fifo+": a FIFO that no reader opened") {
		t.Errorf("no reader: %v", err)
	}

	read := make(chan string, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		data, _ := os.ReadFile(fifo)
		read <- string(data)
	}()
	if err := WriteOutput(context.Background(), fifo, io.Discard, func(w io.Writer) error { _, err := io.WriteString(w, "report\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if got := <-read; got != "report\n" {
		t.Errorf("the reader got %q", got)
	}
}

// TestOnceFlags: -o and --k8s-pod-module, given empty or twice, are
// refused when the flags are read, naming both values.
func TestOnceFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", ""}, "empty; name a file"},
		{[]string{"-o", "a.json", "--output", "b.json"}, "given twice (a.json and b.json)"},
		{[]string{"--k8s-pod-module", "a.nix", "--k8s-pod-module", "b.nix"}, "given twice (a.nix and b.nix)"},
	} {
		var o SourceOptions
		var out string
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		OutputVar(f, &out, "")
		OnceVar(f, &o.K8sPodModule, "k8s-pod-module", "name it", "")
		if err := f.Parse(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v", c.args, err)
		}
	}
	var out string
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	OutputVar(f, &out, "")
	if err := f.Parse([]string{"-o", "r.json"}); err != nil || out != "r.json" {
		t.Errorf("one -o: %q, %v", out, err)
	}
}

// TestVersion: a stamped version stands; else Go's build record, which a
// test binary lacks, or dev.
func TestVersion(t *testing.T) {
	if got := Version("v1.2.3"); got != "v1.2.3" {
		t.Errorf("stamped: %q", got)
	}
	if got := Version("dev"); got == "" || got == "(devel)" {
		t.Errorf("unstamped: %q", got)
	}
}
