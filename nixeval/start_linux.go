package nixeval

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// startTiedToUs starts cmd so that the kernel kills it (SIGKILL) when
// podroles ends, however it ends: a worker that outlived podroles would
// wait for its next task for good, holding nix's database open.
//
// Linux sends the parent-death signal when the thread that started the
// process ends, not the process, and Go ends a thread when a goroutine
// locked to it returns. So every worker is started from one thread that
// nothing else runs on and that lives as long as podroles does.
func startTiedToUs(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	starter() <- func() { done <- cmd.Start() }
	return <-done
}

// starter runs what it is given on its own thread, which it never lets
// go: the goroutine never returns, and the thread is never ended.
var starter = sync.OnceValue(func() chan<- func() {
	starts := make(chan func())
	go func() {
		runtime.LockOSThread()
		for start := range starts {
			start()
		}
	}()
	return starts
})
