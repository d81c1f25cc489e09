// Package dnszone is a DNS server for tests: the A and SRV records a
// Kubernetes headless Service would publish, served on loopback UDP and
// changed while the code under test waits for them.
package dnszone
