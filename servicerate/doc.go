// Package servicerate estimates the service rate of every pipeline stage
// while it runs, from the stage accounting (package stage): how many
// tuples per second the stage could process were it never starved nor
// blocked, i.e. its capacity, without a sweep. Two estimators: RaftLib's
// filtered 95th percentile of non-blocking period counts (Beard et al.),
// and the busy-time estimator of DS2 (OSDI '18) and Flink's autoscaler,
// tuples over the time the stage spent on its own work. Either says
// not_converged rather than a number when it has seen too little.
package servicerate
