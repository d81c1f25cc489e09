// Package verdict holds the rules a trial is judged by (schedule,
// delivery, lateness, backlog, the system's backlog, latency, agents, send
// cost) and Judge, which applies them to what the agents reported: a trial
// passes only if every rule does, and every failing rule says why with
// the numbers. Limit is the one verdict on what limited a trial, from its
// diagnosis, its lateness and its hosts.
package verdict
