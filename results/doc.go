// Package results writes and describes the run directories that cpsweep
// produces: results/<timestamp>-<name>/ with the configuration, every
// trial's verdict and counters (JSON and CSV), the full agent results, a
// summary, and a plot a person can look at.
package results
