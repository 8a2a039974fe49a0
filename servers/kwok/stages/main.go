// Command kwok-stages prints, as YAML documents for the test control plane,
// what kwok keeps in its module rather than in its binary: with no
// argument, its own fast node and pod stages (kwok refuses to start
// without stages); with "crds", the CustomResourceDefinitions of its Exec
// and PortForward objects, which map a fake pod's exec and ports to local
// commands and addresses.
package main

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/kwok/kustomize/crd"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	docs := []string{nodefast.DefaultNodeInit, podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete}
	switch {
	case len(os.Args) == 2 && os.Args[1] == "crds":
		docs = []string{string(crd.Exec), string(crd.PortForward)}
	case len(os.Args) > 1:
		fmt.Fprintln(os.Stderr, "usage: kwok-stages [crds]")
		os.Exit(2)
	}
	for i, d := range docs {
		if i > 0 {
			fmt.Println("---")
		}
		fmt.Print(strings.TrimSpace(d) + "\n")
	}
}
