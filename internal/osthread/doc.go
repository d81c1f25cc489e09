// Package osthread controls the OS thread a hot loop runs on: CPU lists and
// pinning, timer slack, and sleeps shorter than Go's timers can do (the
// runtime's timers wake at millisecond granularity for short sleeps).
package osthread
