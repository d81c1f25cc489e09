// Package sweep finds the maximum sustainable throughput of a receiving
// system. Its root is the controller and the trial loop only: it starts
// every agent's trial (every sender at its share of a target rate for a
// warm-up plus a measured window), collects the outcomes, has them judged
// and their hosts checked (sweep/verdict), diagnosed (sweep/rundiag) and
// their limits worked out (limits), repeats the trials other work on a
// host disturbed, and writes the run directory (rundir) and the
// console's lines. The search over rates is sweep/search's, the control
// API's messages protocol's and its client sweep/remote's, the
// agents themselves sweep/agent's, finding them sweep/discover's, a job's
// own metrics sweep/jobmetrics's, and live scraping sweep/watch's.
package sweep
