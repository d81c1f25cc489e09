package cpustat

import "time"

// Period is how often a run samples: its stage accounting's period, or
// once a second when that is off.
func Period(stagePeriod time.Duration) time.Duration {
	if stagePeriod > 0 {
		return stagePeriod
	}
	return time.Second
}
