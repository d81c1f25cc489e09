// Package cli is the plumbing shared by the command-line front ends and
// their HTTP endpoints: parsing rates and CPU choices, serving /metrics,
// detecting a terminal for progress lines, and writing results as JSON.
package cli
