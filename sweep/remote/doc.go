// Package remote is the controller's side of the agents' control API
// (package protocol): a client that describes an agent, starts, polls and
// stops its trials and downloads its profile. It is apart from the
// protocol's data so that a reader of a run directory links no HTTP.
package remote
