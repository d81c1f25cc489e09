// Package membudget is the default memory budget of a sender's or a
// receiver's run: the share of the host's memory it may plan to use, so
// that no request can make a process allocate past what the host has.
package membudget
