// Command podroles-pause is the sandbox process of the test node's pods.
// It holds the pod's namespaces until the kubelet stops the pod, and
// reaps the zombies of the pod's processes when it is their init (a pod
// that shares its process namespace). It does what registry.k8s.io/pause
// does, so that the node needs no registry: kubenode builds it static
// and puts it alone in an image FROM scratch.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		// One SIGCHLD may stand for several children: reap all that exited.
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
