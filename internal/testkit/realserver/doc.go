// Package realserver starts the real servers the broker tests need
// (Debian's nats-server and redis-server) on a free loopback port, waits
// until they listen, and stops them when the test ends. A missing server
// skips the test, or fails it when CP_REQUIRE_ALL is set (CI), so that
// nothing is skipped silently there. EmbeddedNATS runs the NATS server
// in the test's own process instead.
package realserver
