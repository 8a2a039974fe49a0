// Package codeshape holds tests of the code's shape that no linter
// makes. They check that no type gathers so many methods that it becomes
// the god object of its package, and that every package's doc opens with
// a summary a reader takes in at a glance. It has no code of its own.
package codeshape
