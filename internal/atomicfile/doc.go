// Package atomicfile is the one way the tools write a file whole or not at
// all: a temporary file made anew beside it (O_EXCL, a random name, so a
// link planted in a run directory from elsewhere is never written
// through), filled, given its mode, closed, then renamed over the path. A
// reader never sees half a file, and a failed write leaves the old file.
package atomicfile
