// Package jobagent serves a job's own operators' accounting (package
// dataflow) as a sweep's agent does (package agent): the same control
// API, token, limits and TSC probes, in the role "job". A trial is a
// window of the running job: the sweep starts it with the senders and
// stops it when the receivers are done, and its status carries the
// operators' stage series cut to that window and the dataflow's edges,
// which the diagnosis puts between the senders and the receivers.
package jobagent
