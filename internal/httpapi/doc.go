// Package httpapi is the one request policy of every control and
// configuration API (the agents', the TSC clients' and the profiler's
// configuration server): bearer tokens of a minimum length, checked in
// constant time; bodies bounded (413 above the limit) and JSON decoded
// strictly (unknown fields and trailing data are 400); and errors as JSON.
// It imports nothing from the measuring code, so every API can use it.
package httpapi
