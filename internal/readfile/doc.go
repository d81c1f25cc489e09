// Package readfile is the one way the tools open a file that a user or a
// run directory from elsewhere names: scenarios, replay traces, handler
// configurations, tokens, and every file an analysis reads. Only regular
// files are opened (a FIFO, /dev/zero or a link to /dev/urandom is an
// error, never a hang), and whole-file reads are bounded.
package readfile
