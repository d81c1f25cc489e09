// Package agent serves the sweep control API from dgsend and dgrecv
// (--agent): it describes the agent, runs one trial at a time from a JSON
// configuration, reports its status and results, and exposes the current
// trial's metrics.
package agent
