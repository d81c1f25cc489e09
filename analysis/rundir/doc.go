// Package rundir writes, reads and describes the run directories that
// cpsweep produces: runs/<timestamp>-<name>/ with the configuration, every
// trial's verdict and counters (JSON and CSV), the full agent results, a
// summary, and a plot a person can look at. It is the one reader of a run
// directory: every analysis opens one through Open, which checks its
// format version and lists what is missing or damaged.
package rundir
