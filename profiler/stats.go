package profiler

import (
	"sort"
	"time"
)

// What a profiler can say about itself while it runs, for an exporter
// (package profmetrics turns it into Prometheus metrics): the core links
// no metrics library, so that a job's authors can embed it lightly.

// ChannelInfo is an open channel and its current handler.
type ChannelInfo struct {
	Name, Handler string
}

// CounterStat is a periodic-counter channel's count so far, across
// handler switches, and in its last complete sampling period.
type CounterStat struct {
	Channel    string
	Total      uint64
	LastPeriod uint64
	HasPeriod  bool // false until the first period is complete
}

// SamplePeriod is the counters' sampling period.
func (p *Profiler) SamplePeriod() time.Duration { return p.sampler.period }

// Channels lists the open channels by name with their handlers.
func (p *Profiler) Channels() []ChannelInfo {
	p.mu.Lock()
	names := make([]string, 0, len(p.channels))
	for name := range p.channels {
		names = append(names, name)
	}
	chans := p.channels
	p.mu.Unlock()
	sort.Strings(names)
	out := make([]ChannelInfo, 0, len(names))
	for _, name := range names {
		p.mu.Lock()
		c := chans[name]
		p.mu.Unlock()
		h := c.Config().Handler
		if h == "" {
			h = HandlerNull
		}
		out = append(out, ChannelInfo{Name: name, Handler: h})
	}
	return out
}

// Counters lists every counter channel's counts, by name.
func (p *Profiler) Counters() []CounterStat {
	p.sampler.mu.Lock()
	defer p.sampler.mu.Unlock()
	out := make([]CounterStat, 0, len(p.sampler.chans))
	for name, ser := range p.sampler.chans {
		st := CounterStat{Channel: name, Total: ser.total()}
		if n := len(ser.periods); n > 0 {
			st.LastPeriod, st.HasPeriod = ser.periods[n-1], true
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Channel < out[j].Channel })
	return out
}
