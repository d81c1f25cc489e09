// Package e2e holds the end-to-end tests and benchmarks that build and run
// the real binaries on loopback. It has no library code: the process
// harness (binaries_test.go) is its tests' own.
package e2e
