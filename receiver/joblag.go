package receiver

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
)

// JobLagEvery is how often a job's lag on its input is read: each read is
// a connection of its own (driver.Admin), so it is read on a goroutine of
// its own, never the monitor's, and a backlog sample carries the latest
// value read.
const JobLagEvery = 500 * time.Millisecond

// noLag marks a job lag not read yet.
const noLag = math.MinInt64

// jobLag reads a job's consumer-group lag on its input until closed.
type jobLag struct {
	latest atomic.Int64 // noLag until the first read; -1: unreadable
	readAt atomic.Int64 // Unix ns of the latest read
	failed atomic.Value // string: the first read that failed, and why
	stop   chan struct{}
	done   sync.WaitGroup
}

// jobLagOf starts reading the lag of cfg's job, if it has one.
func jobLagOf(cfg Config) *jobLag {
	if cfg.JobInput == "" {
		return nil
	}
	e, _ := driver.Parse(cfg.JobInput) // checked by Validate
	return startJobLag(cfg.Brokers, e)
}

func startJobLag(reg driver.Registry, e driver.Endpoint) *jobLag {
	j := &jobLag{stop: make(chan struct{})}
	j.latest.Store(noLag)
	j.done.Add(1)
	go func() {
		defer j.done.Done()
		tick := time.NewTicker(JobLagEvery)
		defer tick.Stop()
		var prev driver.GroupState // the latest read that worked
		read := false
		for {
			g, err := reg.Group(e)
			at := time.Now().Format("15:04:05.000")
			switch {
			case err != nil:
				g.Lag = -1
				j.fail(fmt.Sprintf("the job's lag on its input %s could not be read at %s: %v", e.Where(), at, err))
			case read:
				// a read that works is not enough: the job may have made
				// its input again (reconnecting) between two reads, which
				// breaks what the trial owes and has counted
				if why := driver.Remade(prev, g); why != "" {
					j.fail(fmt.Sprintf("the job's input %s was deleted and made again mid-trial (seen at %s: %s)", e.Where(), at, why))
				}
			}
			if err == nil {
				prev, read = g, true
			}
			j.latest.Store(g.Lag)
			j.readAt.Store(time.Now().UnixNano())
			select {
			case <-j.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return j
}

// fail records why the job cannot be judged, the first time.
func (j *jobLag) fail(why string) {
	if j.failed.Load() == nil {
		j.failed.Store(why)
	}
}

// value is the latest lag read (nil: none yet, or no job).
func (j *jobLag) value() *int64 {
	if j == nil {
		return nil
	}
	v := j.latest.Load()
	if v == noLag {
		return nil
	}
	return &v
}

// read is the latest lag read and when it was read (-1 and the zero
// time: none yet, or no job).
func (j *jobLag) read() (int64, time.Time) {
	if j == nil {
		return -1, time.Time{}
	}
	at := j.readAt.Load()
	v := j.latest.Load()
	if v == noLag || at == 0 {
		return -1, time.Time{}
	}
	return v, time.Unix(0, at)
}

// failure is the first failed read, and why ("": none failed).
func (j *jobLag) failure() string {
	if j == nil {
		return ""
	}
	f, _ := j.failed.Load().(string)
	return f
}

func (j *jobLag) close() {
	if j == nil {
		return
	}
	select {
	case <-j.stop:
	default:
		close(j.stop)
	}
	j.done.Wait()
}
