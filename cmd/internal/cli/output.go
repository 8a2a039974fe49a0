package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// CheckOutput says, before any work, whether a report can be written to
// path: its folder must exist, and path must be no folder. "" is
// standard output.
func CheckOutput(path string) error {
	if path == "" {
		return nil
	}
	target, err := outputTarget(path)
	if err != nil {
		return err
	}
	info, err := os.Stat(target)
	switch {
	case err == nil && info.IsDir():
		return fmt.Errorf("output %s: is a folder; name a file in it", path)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("output %s: %w", path, pathErr(err))
	}
	dir, err := os.Stat(filepath.Dir(target))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("output %s: folder %s does not exist", path, filepath.Dir(target))
	case err != nil:
		return fmt.Errorf("output %s: %w", path, pathErr(err))
	case !dir.IsDir():
		return fmt.Errorf("output %s: %s is no folder", path, filepath.Dir(target))
	}
	return nil
}

// WriteOutput writes through write to path, or to w when path is "".
// A regular file, or a path with no file yet, is written beside its
// place and renamed onto it, so a failed write never leaves half a
// report; the file keeps its mode and owner. A device, a FIFO or another
// special file is written directly: renaming onto /dev/null would replace
// it. A symbolic link is followed to its target.
//
// A FIFO is opened only once a reader has it open, waiting for one until
// ctx ends: an interrupt stops a command whose reader never comes.
func WriteOutput(ctx context.Context, path string, w io.Writer, write func(io.Writer) error) error {
	if path == "" {
		return write(w)
	}
	if err := CheckOutput(path); err != nil {
		return err
	}
	target, err := outputTarget(path)
	if err != nil {
		return err
	}
	info, err := os.Stat(target)
	if err == nil && !info.Mode().IsRegular() {
		err = writeSpecial(ctx, target, info, write)
	} else {
		err = writeRenamed(target, info, write)
	}
	if err != nil {
		return fmt.Errorf("output %s: %w", path, err)
	}
	return nil
}

// outputTarget follows path's symbolic links, also to a target that does
// not exist yet.
func outputTarget(path string) (string, error) {
	for range 40 {
		dest, err := os.Readlink(path)
		if err != nil {
			return path, nil // no link: the path itself
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", fmt.Errorf("output %s: too many levels of symbolic links", path)
}

// writeSpecial writes a device, FIFO or socket in place.
func writeSpecial(ctx context.Context, target string, info fs.FileInfo, write func(io.Writer) error) error {
	f, err := openSpecial(ctx, target, info)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// openSpecial opens a special file to write. A FIFO's open blocks until
// a reader comes, where no signal reaches the command: it is opened
// without blocking, tried again until a reader has it or ctx ends.
func openSpecial(ctx context.Context, target string, info fs.FileInfo) (*os.File, error) {
	if info.Mode()&fs.ModeNamedPipe == 0 {
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		return f, pathErr(err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		f, err := os.OpenFile(target, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			// Writes block again, as on any file.
			if err := syscall.SetNonblock(int(f.Fd()), false); err != nil {
				f.Close()
				return nil, pathErr(err)
			}
			return f, nil
		}
		if !errors.Is(err, syscall.ENXIO) {
			return nil, pathErr(err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("a FIFO that no reader opened before the command was stopped")
		case <-tick.C:
		}
	}
}

// writeRenamed writes a new file beside target and renames it onto
// target, with the mode and owner of the file it replaces (old, nil when
// there is none).
func writeRenamed(target string, old fs.FileInfo, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*")
	if err != nil {
		return pathErr(err)
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	mode := fs.FileMode(0o644)
	if old != nil {
		mode = old.Mode().Perm()
		if st, ok := old.Sys().(*syscall.Stat_t); ok {
			// Only root may give a file away; others keep their own.
			if err := f.Chown(int(st.Uid), int(st.Gid)); err != nil && os.Geteuid() == 0 {
				f.Close()
				return pathErr(err)
			}
		}
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return pathErr(err)
	}
	if err := f.Close(); err != nil {
		return pathErr(err)
	}
	return pathErr(os.Rename(f.Name(), target))
}

// pathErr drops the file name from err: the message names the output's
// path, never a temporary file.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
