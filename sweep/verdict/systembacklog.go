package verdict

// brokerLagGrowth is how much the broker's backlog grew over the window:
// the trend of every receiver's summed consumer lag, added up (one
// consumer's lag alone would hide another's growth). The limit is
// rules.BacklogGrowth of the messages one second carries at the target
// rate, and at least 10 messages. unread counts receivers whose lag could
// not be read (the rule cannot pass then). ok is false without broker
// samples.
func brokerLagGrowth(o *Outcome, rules Rules) (grew, limit float64, consumers, unread int, ok bool) {
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
			if p.BrokerLag == nil {
				continue
			}
			if *p.BrokerLag < 0 {
				valid = false
				break
			}
			lag = append(lag, point{float64(p.UnixNs-o.Window[0]) / 1e9, float64(*p.BrokerLag)})
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
	bucket := 1
	if len(o.Senders) > 0 && o.Senders[0] != nil && o.Senders[0].BucketSize > 0 {
		bucket = o.Senders[0].BucketSize
	}
	limit = max(rules.BacklogGrowth*o.Rate/float64(bucket), 10)
	return grew, limit, consumers, unread, consumers+unread > 0
}
