// Package rundiag diagnoses the trials of a run directory offline
// (cpsweep diagnose, and the sweep's diagnosis.json): the agents' stage
// series joined into the pipeline's graph, aligned through the run's TSC
// relation, the limiting stage named over each trial's measured window,
// and the one verdict on a trial's limit (sweep/verdict) applied to it.
// It is apart from package diagnose, which rundir imports for the
// records it reads and writes.
package rundiag
