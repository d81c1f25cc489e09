// Package readfile reads the small files a user names on a command line
// (scenarios, replay traces, handler configurations, tokens) with a bound:
// a device such as /dev/zero or a huge file given by mistake is an error,
// not an out-of-memory crash.
package readfile
