// Package kubeflag checks the flags that name Kubernetes objects.
//
// It is apart from package cli, which the checker links, because
// Kubernetes' validation package compiles its patterns at start-up; only
// plan and the scenario commands take a namespace.
package kubeflag

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// CheckNamespace refuses a --namespace that Kubernetes would refuse: a
// DNS label (RFC 1123). "" is no namespace.
func CheckNamespace(ns string) error {
	if ns == "" {
		return nil
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("--namespace %q: %s", ns, strings.Join(errs, "; "))
	}
	return nil
}
