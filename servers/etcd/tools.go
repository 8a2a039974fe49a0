//go:build tools

// Package tools pins etcd's main package for go build.
package tools

import _ "go.etcd.io/etcd/server/v3"
