// Package verdict holds the rules a trial is judged by (schedule,
// delivery, lateness, backlog, the system's backlog, latency, agents, send
// cost) and Judge, which applies them to what the agents reported: a trial
// passes only if every rule does, and every failing rule says why with
// the numbers.
package verdict
