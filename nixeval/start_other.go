//go:build !linux

package nixeval

import "os/exec"

// startTiedToUs starts cmd. Only Linux has a parent-death signal: elsewhere
// a worker that outlives podroles waits for its next task until the next
// run lets it end (rundir.go).
func startTiedToUs(cmd *exec.Cmd) error { return cmd.Start() }
