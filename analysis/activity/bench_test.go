package activity

import (
	"math/rand/v2"
	"testing"
	"time"
)

// pipelineTrace is a synthetic run of n buckets through a sender thread,
// a lane and a consumer, each a few hundred ns of work with jitter, and
// every wait in between logged: about 6 activities and 2 transfers per
// bucket. Seeded.
func pipelineTrace(n int, seed uint64) *Trace {
	r := rand.New(rand.NewPCG(seed, 1))
	jit := func(ns int64) int64 { return ns/2 + r.Int64N(ns) }
	tr := &Trace{Workers: []string{"sender0/thread0", "receiver0/lane0", "receiver0/consumer"}, Activities: make([][]Activity, 3)}
	var s, l, c int64 // each worker's clock
	for i := 0; i < n; i++ {
		// The sender paces, then sends.
		sendAt := s + jit(400)
		sent := sendAt + jit(200)
		tr.Activities[0] = append(tr.Activities[0], Activity{Pacing, s, sendAt, 0}, Activity{Send, sendAt, sent, 1})
		s = sent
		// The lane waits for the bucket if it is not there yet, then decodes.
		if recv := sent + jit(2000); recv > l {
			tr.Activities[1] = append(tr.Activities[1], Activity{RecvWait, l, recv, 0})
			l = recv
		}
		tr.Transfers = append(tr.Transfers, Transfer{From: 0, To: 1, SentNs: sent, RecvNs: l, ErrNs: 50, Tuples: 10})
		handed := l + jit(300)
		tr.Activities[1] = append(tr.Activities[1], Activity{Decode, l, handed, 1})
		l = handed
		// The consumer idles until the bucket is handed over, then consumes.
		if handed > c {
			tr.Activities[2] = append(tr.Activities[2], Activity{Idle, c, handed, 0})
			c = handed
		}
		tr.Transfers = append(tr.Transfers, Transfer{From: 1, To: 2, SentNs: handed, RecvNs: c})
		done := c + jit(500)
		tr.Activities[2] = append(tr.Activities[2], Activity{Consume, c, done, 10})
		c = done
	}
	return tr
}

func events(tr *Trace) int {
	n := len(tr.Transfers)
	for _, a := range tr.Activities {
		n += len(a)
	}
	return n
}

// BenchmarkPAG is the graph and its critical participation per event
// (activity or transfer), windows of 1 ms, one core. Issue #15's target:
// at least 5 M events/s (ST2: 1 M on one worker).
func BenchmarkPAG(b *testing.B) {
	perEvent(b, func(tr *Trace) error {
		bd, err := NewBuilder(tr, Options{WindowNs: 1_000_000, WaitNs: DefaultWaitNs})
		if err != nil {
			return err
		}
		var w Window
		for bd.Next(&w) {
		}
		return nil
	})
}

// BenchmarkAnalyze is everything analyze --pag computes per event: the
// graph and critical participation, metrics, 3-hops and the invariants.
func BenchmarkAnalyze(b *testing.B) {
	perEvent(b, func(tr *Trace) error {
		_, err := analyzeWhole(tr, Options{WindowNs: 1_000_000, WaitNs: DefaultWaitNs, MessageDelayNs: DefaultMessageDelayNs}, DefaultHops,
			Limits{ProgressWorker: 2, ProgressMaxNs: 1e6, MessageMaxNs: 1e6, OperatorMaxNs: 1e6})
		return err
	})
}

// perEvent runs f over a 200 k-bucket pipeline trace and reports events/s.
func perEvent(b *testing.B, f func(*Trace) error) {
	tr := pipelineTrace(200_000, 7)
	ev := events(tr)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		if err := f(tr); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(ev)*float64(b.N)/time.Since(start).Seconds()/1e6, "Mevents/s")
}
