// Package probing is the TSC probing's data: the clients' descriptions,
// the sessions of probes between every ordered pair, and the relation
// file made from sessions taken before and after an experiment (the
// paper's MinRTT relation and the tighter polygon relation, per pair),
// which translates any node's TSC values into the reference node's domain
// with a strict bound. The probing over the network is package probeapi.
package probing
