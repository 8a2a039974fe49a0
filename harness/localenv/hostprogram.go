package localenv

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A program of the host that containers run (podroles as the pods'
// supervisor, and the Vault and Authelia that make servers built) is
// mounted at its own path. A static one runs as it is. A dynamically
// linked one (podroles as go install builds it, with cgo) would look for
// its loader and libc in the image, which has its own, another one, or
// none: it runs through the host's own loader instead, mounted with the
// host's libraries it needs in a folder of their own, the loader given
// that folder as the only place to look. So a user with nothing but a
// podroles binary, whatever its linking, runs the containers provider.

// hostLibDir is where a container finds the host's loader and libraries.
const hostLibDir = "/podroles-host/lib"

// hostProgram is a program of the host as containers run it.
type hostProgram struct {
	path string
	// run stands for path at the head of a command: path itself, or the
	// loader and its library path first.
	run []string
	// binds are the mounts it needs: itself, and a dynamic one's loader
	// and libraries.
	binds []string
}

// newHostProgram reads how path is linked.
func newHostProgram(path string) (hostProgram, error) {
	p := hostProgram{path: path, run: []string{path}, binds: []string{path + ":" + path + ":ro"}}
	loader, libs, err := loaderAndLibraries(path)
	if err != nil {
		return p, fmt.Errorf("%s, to run in containers: %w", path, err)
	}
	if loader == "" {
		return p, nil
	}
	for _, lib := range append([]string{loader}, libs...) {
		real, err := filepath.EvalSymlinks(lib)
		if err != nil {
			return p, fmt.Errorf("%s, to run in containers: %w", path, err)
		}
		p.binds = append(p.binds, real+":"+hostLibDir+"/"+filepath.Base(lib)+":ro")
	}
	p.run = []string{hostLibDir + "/" + filepath.Base(loader), "--library-path", hostLibDir, path}
	return p, nil
}

// loaderAndLibraries returns the ELF interpreter of a program and every
// shared library it needs, found as the host's loader would find them;
// "" and none for a static program.
func loaderAndLibraries(path string) (loader string, libs []string, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return "", nil, fmt.Errorf("its loader: %w", err)
			}
			loader = strings.TrimRight(string(b), "\x00")
		}
	}
	if loader == "" {
		return "", nil, nil
	}
	dirs := librarySearchPath()
	seen := map[string]bool{filepath.Base(loader): true}
	queue := []*elf.File{f}
	for len(queue) > 0 {
		obj := queue[0]
		queue = queue[1:]
		needed, err := obj.ImportedLibraries()
		if err != nil {
			return "", nil, err
		}
		for _, name := range needed {
			if seen[name] {
				continue
			}
			seen[name] = true
			lib, libFile, err := findLibrary(name, dirs, f)
			if err != nil {
				return "", nil, err
			}
			defer libFile.Close()
			libs = append(libs, lib)
			queue = append(queue, libFile)
		}
	}
	return loader, libs, nil
}

// findLibrary finds name in dirs, of the class and machine of the program.
func findLibrary(name string, dirs []string, program *elf.File) (string, *elf.File, error) {
	for _, d := range dirs {
		candidate := filepath.Join(d, name)
		lib, err := elf.Open(candidate)
		if err != nil {
			continue
		}
		if lib.Class == program.Class && lib.Machine == program.Machine {
			return candidate, lib, nil
		}
		lib.Close()
	}
	return "", nil, fmt.Errorf("it needs %s, which is in none of %s", name, strings.Join(dirs, ", "))
}

// librarySearchPath is where the host's loader looks: the folders of
// /etc/ld.so.conf and what it includes, then the default ones.
func librarySearchPath() []string {
	var dirs []string
	var read func(file string, depth int)
	read = func(file string, depth int) {
		f, err := os.Open(file)
		if err != nil || depth > 8 {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if i := strings.IndexByte(line, '#'); i >= 0 {
				line = strings.TrimSpace(line[:i])
			}
			if pattern, ok := strings.CutPrefix(line, "include "); ok {
				matches, _ := filepath.Glob(strings.TrimSpace(pattern))
				for _, m := range matches {
					read(m, depth+1)
				}
			} else if filepath.IsAbs(line) {
				dirs = append(dirs, line)
			}
		}
	}
	read("/etc/ld.so.conf", 0)
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// runAs is argv with each host program at the head of a command (the
// supervisor's, and the service's after its --) run as the containers
// run it.
func runAs(argv []string, programs []hostProgram) []string {
	var out []string
	for _, a := range argv {
		i := -1
		for j, p := range programs {
			if p.path == a {
				i = j
			}
		}
		if i < 0 {
			out = append(out, a)
			continue
		}
		out = append(out, programs[i].run...)
	}
	return out
}
