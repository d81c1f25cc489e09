// Package wirecorpus is the executable conformance corpus of docs/wire.md:
// crafted messages, valid and invalid, each with the outcome the document
// requires of a receiver (which malformed counter it increments, and the
// state of its stream afterwards). The corpus is written to
// testdata/wire/cases.json, a language-neutral file that implementations in
// other languages can run against their own code; dgrecv's tests run it
// (receiver/conformance_test.go) and so does the Python test.
//
// The expectations are written from the document's rules, by hand, never
// by running a receiver; the cases are built in build_test.go, which
// checks the committed file against them. This package reads the file,
// and compares a receiver's outcome with a case's.
package wirecorpus
