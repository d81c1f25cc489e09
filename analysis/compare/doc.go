// Package compare puts several run directories side by side: each run's
// answer and its uncertainty, the latency at the answer, what limited it
// and the host accounting there, and where the runs differ in plan or in
// machines (a difference that makes their answers answers to different
// questions). cpsweep compare renders it as text, JSON or an HTML page
// with the runs' sweeps and latency distributions overlaid.
package compare
