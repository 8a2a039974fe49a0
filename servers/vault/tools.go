//go:build tools

// Package tools pins the Vault main package for go build.
package tools

import _ "github.com/hashicorp/vault"
