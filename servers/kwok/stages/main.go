// Command kwok-stages prints kwok's own fast node and pod stages as YAML
// documents, for a kwok configuration file: kwok refuses to start without
// stages, and they live in its module, not in this repository.
package main

import (
	"fmt"
	"os"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	docs := []string{nodefast.DefaultNodeInit, podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete}
	for i, d := range docs {
		if i > 0 {
			fmt.Println("---")
		}
		fmt.Print(strings.TrimSpace(d) + "\n")
	}
	os.Exit(0)
}
