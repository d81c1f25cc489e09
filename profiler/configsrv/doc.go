// Package configsrv is the handler configuration's network side: reading
// one from a file or a configuration server (Fetch, FromSource), following
// it for live switches (Follow), and serving one (Serve, cpsweep profiler
// serve). It is apart from the profiler's core so that a program that
// embeds the profiler links no HTTP server or client unless it asks.
package configsrv
