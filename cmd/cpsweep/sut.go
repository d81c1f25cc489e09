package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/sweep"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/spf13/pflag"
)

// checkSUT refuses a --sut that is not a broker endpoint, or that comes
// with agents of the user's own (their receivers name it themselves).
func checkSUT(sut string, remote, relay bool) error {
	switch {
	case sut == "":
		return nil
	case !driver.IsBroker(sut):
		return fmt.Errorf("--sut %q: want a broker endpoint, nats://HOST:PORT/SUBJECT, jetstream://HOST:PORT/SUBJECT, redis://HOST:PORT/KEY or kafka://HOST:PORT/TOPIC (a ZeroMQ system under test is --relay-input)", sut)
	case remote:
		return errors.New("--sut starts local agents on it: with agents of your own, start each receiver agent with --connect BROKER-ENDPOINT instead")
	case relay:
		return errors.New("--sut and --relay-input: a broker is the whole path, give one")
	}
	if _, err := driver.Parse(sut); err != nil {
		return fmt.Errorf("--sut: %w", err)
	}
	return nil
}

// jobFlags are a stream processor as the system under test (docs/sut.md).
type jobFlags struct {
	input, output string
	catchUp       time.Duration
	bucketGiven   bool // --bucket was set: a JSON input does not make it 1
}

func (j *jobFlags) register(f *pflag.FlagSet, p *sweep.TrialPlan) {
	f.StringVar(&j.input, "input", "", "a stream processor as the system under test: its input topic, a broker URL naming the job's consumer group\n(jetstream://HOST:PORT/SUBJECT?group=NAME, redis://..., kafka://...): the senders publish into it, and the job's lag on it is its backlog (docs/sut.md);\nadd &format=json for a job that reads one JSON event a message (docs/brokers.md)")
	f.StringVar(&j.output, "output", "", "with --input: the job's output topic, a broker URL of any driver: the receivers read it (local mode: in the group cp);\n&format=json and the mapping of its fields for a job that writes JSON events (docs/brokers.md)")
	f.StringVar(&p.ExpectFilter, "expect-filter", "", "with --input: the job's filter, declared, e.g. 'event_type == view': the senders count what it keeps, and the job owes exactly that (docs/sut.md)")
	f.DurationVar(&p.ExpectWindow, "expect-window", 0, "with --input and --schema window: the job's window, declared (YSB's tumbling windows of event time, e.g. 1s): the senders\ncount what each campaign's window owes, and every window's count must be exact (docs/sut.md)")
	f.DurationVar(&p.JobQuiet, "job-quiet", trialcfg.DefaultJobQuiet, "with --input: a trial ends once the job has caught up and its output has been quiet this long (longer than it holds a tuple: a window and its lateness)")
	f.DurationVar(&j.catchUp, "catch-up", sweep.DefaultCatchUp, "with --input: how long a trial waits for the job to catch up with earlier input before it says it cannot")
}

// apply makes the job the plan's system under test, or refuses the flags.
func (j *jobFlags) apply(p *sweep.TrialPlan, sut string, relay bool, lanes int) error {
	switch {
	case j.input == "" && j.output == "":
		if p.ExpectFilter != "" || p.ExpectWindow != 0 {
			return errors.New("--expect-filter and --expect-window declare a job's filter and window: give the job's --input and --output too")
		}
		if e, err := driver.Parse(sut); err == nil && e.JSON() && !j.bucketGiven {
			p.BucketSize = 1 // a broker of JSON events, one a message
		}
		return nil
	case j.input == "" || j.output == "":
		return errors.New("a job as the system under test needs both --input (with its group) and --output")
	case sut != "" || relay:
		return errors.New("--input/--output is a job between two topics: leave out --sut and --relay-input")
	case lanes != 1:
		return errors.New("--input/--output: the job's output is one topic, read by one lane (leave out --lanes)")
	}
	if in, err := driver.Parse(j.input); err == nil && in.JSON() && !j.bucketGiven {
		p.BucketSize = 1 // one JSON event a message
	}
	p.UseJob(sweep.JobPlan{Input: j.input, Output: j.output, CatchUp: j.catchUp})
	return nil
}
