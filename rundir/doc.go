// Package rundir writes, reads and describes the run directories that
// cpsweep produces: runs/<timestamp>-<name>/ with the configuration, every
// trial's verdict and counters (JSON and CSV), the full agent results, a
// summary. It is the one reader of a run directory: every analysis opens
// one through Open, which checks its format version and lists what is
// missing or damaged. The sweep writes through it and the analyses read
// through it; it imports neither (a top-level package since issue 44).
// It owns the directory's file names (names.go): no other package spells
// one (a layout test holds it).
package rundir
