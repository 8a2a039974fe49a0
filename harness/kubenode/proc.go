package kubenode

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"
)

// The node's processes are a procgroup.Group of the node's folder; these
// are the few things about other processes that the node needs besides.

// statFields are the fields of /proc/PID/stat after the command's name
// (which is in parentheses and may hold spaces), or nil when the process
// is gone.
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
}

// waitGone polls running until it is false or within has passed: there is
// nothing to wait on for processes that are not our children.
func waitGone(running func() bool, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for delay := 10 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		if !running() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(delay)
	}
}
