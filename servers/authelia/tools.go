//go:build tools

// Package tools pins the Authelia main package for go build.
package tools

import _ "github.com/authelia/authelia/v4/cmd/authelia"
