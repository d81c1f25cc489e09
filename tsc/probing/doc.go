// Package probing runs the TSC probing of several nodes: a TSC client on
// every node answers probes (UDP) and, on request (HTTP/JSON), probes a
// peer; a TSC server asks every ordered pair of clients to probe each
// other and records the probes in a session; sessions taken before and
// after an experiment make a relation file (the paper's MinRTT relation
// and the tighter polygon relation, per pair) that translates any node's
// TSC values into the reference node's domain with a strict bound.
package probing
