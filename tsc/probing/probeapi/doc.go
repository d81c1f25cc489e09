// Package probeapi is the TSC probing over the network: a TSC client's
// HTTP API, which probes a peer's UDP responder on request, and the
// rounds a TSC server runs through it (one session, or one every period
// related to the first). It is apart from package probing, the sessions
// and relations as data, so that a reader of a relation file links no
// HTTP.
package probeapi
