// Package codeshape holds tests of the code's shape that no linter makes:
// no type gathers so many methods that it becomes the god object of its
// package. It has no code of its own.
package codeshape
