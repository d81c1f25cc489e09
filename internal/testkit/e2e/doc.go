// Package e2e holds the end-to-end tests and benchmarks that build and run
// the real dgsend and dgrecv binaries on loopback. It has no library code
// beyond the process harness below.
package e2e
