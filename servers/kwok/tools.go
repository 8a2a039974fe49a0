//go:build tools

// Package tools pins the kwok command for go build.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
