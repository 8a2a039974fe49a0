package localenv

// HostProgram is how containers run a program of the host, for the
// external tests: what stands for it in a command, and its mounts.
func HostProgram(path string) (run, binds []string, err error) {
	p, err := newHostProgram(path)
	return p.run, p.binds, err
}
