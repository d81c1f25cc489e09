package verdict

import (
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/rundir"
)

// brokerLagGrowth is how much the broker's backlog grew over the window:
// the trend of every receiver's summed consumer lag, added up (one
// consumer's lag alone would hide another's growth). The limit is
// rules.BacklogGrowth of the messages one second carries at the target
// rate, and at least 10 messages. unread counts receivers whose lag could
// not be read (the rule cannot pass then). ok is false without broker
// samples.
func brokerLagGrowth(o *rundir.Outcome, rules Rules) (grew, limit float64, consumers, unread int, ok bool) {
	grew, consumers, unread = lagGrowth(o, func(s tally.BacklogSample) *int64 { return s.BrokerLag })
	limit = lagLimit(o, rules)
	return grew, limit, consumers, unread, consumers+unread > 0
}

// jobLagGrowth is brokerLagGrowth for the lag of a job's consumer group
// on its input (a stream processor between two topics, docs/sut.md): a
// job that falls behind its input grows it, however fast its output is
// read. ok is false without job samples.
func jobLagGrowth(o *rundir.Outcome, rules Rules) (grew, limit float64, readers, unread int, ok bool) {
	grew, readers, unread = lagGrowth(o, func(s tally.BacklogSample) *int64 { return s.JobLag })
	return grew, lagLimit(o, rules), readers, unread, readers+unread > 0
}

// JobLagGrew is how much the job's lag on its input grew over the
// trial's window (ok: the receivers read it), for the line that names
// the limit.
func JobLagGrew(o *rundir.Outcome) (grew float64, ok bool) {
	grew, readers, unread := lagGrowth(o, func(s tally.BacklogSample) *int64 { return s.JobLag })
	return grew, readers > 0 && unread == 0
}

// lagLimit is rules.BacklogGrowth of the messages one second carries at
// the target rate, and at least 10 messages.
func lagLimit(o *rundir.Outcome, rules Rules) float64 {
	return max(rules.BacklogGrowth*o.Rate/float64(bucketSize(o)), 10)
}

// lagGrowth adds up every receiver's trend of the lag series that lag
// picks over the window; unread counts receivers with a sample that
// could not be read (-1).
func lagGrowth(o *rundir.Outcome, lagOf func(tally.BacklogSample) *int64) (grew float64, consumers, unread int) {
	span := float64(o.Window[1]-o.Window[0]) / 1e9
	for _, r := range o.Receivers {
		if r == nil {
			continue
		}
		var lag trend
		valid := true
		for _, p := range r.Backlog {
			if o.Window[1] > 0 && (p.UnixNs < o.Window[0] || p.UnixNs > o.Window[1]) {
				continue
			}
			v := lagOf(p)
			if v == nil {
				continue
			}
			if *v < 0 {
				valid = false
				break
			}
			lag = append(lag, point{float64(p.UnixNs-o.Window[0]) / 1e9, float64(*v)})
		}
		if !valid {
			unread++
			continue
		}
		if len(lag) == 0 {
			continue
		}
		consumers++
		grew += lag.slope() * span
	}
	return grew, consumers, unread
}
