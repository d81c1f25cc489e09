package sweep

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cloudprofiler-go/cp/driver"
)

// A broker between the senders and the receivers (package driver) is the
// system under test: its failure, its backlog and its name in the
// diagnosis are read from the agents' results here.

// systemFailure is the system under test's failure reported by any agent
// (a broker gone mid-trial): the trial is invalid, never a failed rate.
func systemFailure(o *Outcome) error {
	var all []string
	for _, s := range o.Senders {
		if s != nil {
			all = append(all, s.SystemFailures...)
		}
	}
	for _, r := range o.Receivers {
		if r != nil {
			all = append(all, r.SystemFailures...)
		}
	}
	if len(all) == 0 {
		return nil
	}
	msg := all[0]
	if len(all) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(all)-1)
	}
	return &AgentError{Agent: "the system under test", Err: errors.New(msg), System: true}
}

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

// brokerOf is the driver of the broker the trial's data went through ("":
// none), from the receivers' lane endpoints.
func brokerOf(o *Outcome) string {
	for _, r := range o.Receivers {
		if r == nil {
			continue
		}
		for _, l := range r.Lanes {
			if driver.IsBroker(l.Endpoint) {
				scheme, _, _ := strings.Cut(l.Endpoint, "://")
				return scheme
			}
		}
	}
	return ""
}
