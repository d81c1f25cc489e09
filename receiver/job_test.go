package receiver_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/receiver"
	"github.com/cloudprofiler-go/cp/receiver/tally"
	"github.com/cloudprofiler-go/cp/scenarios"
	"github.com/cloudprofiler-go/cp/trialcfg"
	"github.com/cloudprofiler-go/cp/wire"
)

// windowBucket is a job's output bucket of stream 0xff00: windows of
// count each, the latest event intended at intended.
func windowBucket(seq uint64, intended time.Time, windows int, count int64) []byte {
	var body []byte
	for i := range windows {
		body = wire.AppendArrayLen(body, 5)
		body = wire.AppendUint64Fixed(body, seq*100+uint64(i))
		body = wire.AppendInt64Fixed(body, intended.UnixNano())
		body = wire.AppendStr(body, fmt.Sprintf("campaign-%04d", i))
		body = wire.AppendInt64Fixed(body, intended.UnixMilli()/1000*1000+1000)
		body = wire.AppendInt64Fixed(body, count)
	}
	msg := make([]byte, wire.HeaderSize, wire.HeaderSize+len(body))
	wire.PutHeader(msg, wire.Header{Kind: wire.KindData, Stream: 0xff00, Seq: seq, Count: uint32(windows), BodyLen: uint32(len(body))})
	return append(msg, body...)
}

// TestATrialOfAJob: a receiver reading a job's output in a sweep's trial
// goes on with the output stream where the agent's last trial left it
// (or joins it at its first bucket), counts a bucket of an earlier trial
// apart, adds up the windows' counts, and ends once the senders are done,
// the job's lag on its input is 0 and the output is quiet; a bucket lost
// between two trials is a gap; a job whose lag stays put with nothing
// written is gone, and the run says so as the system's failure.
func TestATrialOfAJob(t *testing.T) {
	addr := realserver.EmbeddedNATS(t)
	for i, tc := range []struct {
		name      string
		next      map[uint32]uint64
		backlog   int // messages left unread in the job's input
		complete  bool
		reason    string
		firstSeq  uint64
		gaps      uint64
		failure   string
		windowSum uint64
	}{
		{"goes on where the last trial left it", map[uint32]uint64{0xff00: 10}, 0, true, "the job caught up", 10, 0, "", 24},
		{"joins a stream it never saw at its first bucket", nil, 0, true, "the job caught up", 10, 0, "", 24},
		{"a bucket lost between trials", map[uint32]uint64{0xff00: 8}, 0, false, "the job caught up", 8, 2, "", 24},
		{"the job is gone", map[uint32]uint64{0xff00: 10}, 3, true, "no progress", 10, 0, "stayed at 3", 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := fmt.Sprintf("jetstream://%s/job%d.in?group=job", addr, i)
			out := fmt.Sprintf("jetstream://%s/job%d.out", addr, i)
			ensureJob(t, in, out)
			start := time.Now()
			publish(t, in, tc.backlog, func(int) []byte { return windowBucket(0, start, 1, 1) })
			// bucket 10 is an earlier trial's late window, 11..14 this one's
			publish(t, out, 5, func(k int) []byte {
				if k == 0 {
					return windowBucket(10, start.Add(-time.Second), 2, 5)
				}
				return windowBucket(uint64(10+k), start.Add(time.Duration(k)*time.Millisecond), 2, 3)
			})
			res := runJobTrial(t, in, out, start, func(c *receiver.Config) { c.StreamNext = tc.next })
			if len(res.Streams) != 1 {
				t.Fatalf("streams %+v", res.Streams)
			}
			s := res.Streams[0]
			if res.Complete != tc.complete || !strings.Contains(res.Reason, tc.reason) || s.FirstSeq != tc.firstSeq || s.NextSeq != 15 || s.GapBuckets != tc.gaps {
				t.Errorf("complete %v (%q), reason %q, stream %d..%d with %d gap(s); want %v, %q, %d..15 with %d", res.Complete, s.Status, res.Reason, s.FirstSeq, s.NextSeq, s.GapBuckets, tc.complete, tc.reason, tc.firstSeq, tc.gaps)
			}
			if res.Earlier != 2 || s.EarlierTuples != 2 || res.Consumed != 8 || res.WindowCount != tc.windowSum || res.Latency.Count != 8 {
				t.Errorf("earlier %d (stream %d), consumed %d windows counting %d, %d latencies; want 2, 8 windows counting %d, 8", res.Earlier, s.EarlierTuples, res.Consumed, res.WindowCount, res.Latency.Count, tc.windowSum)
			}
			// each window's delay after its end: its end is the second
			// after start, so it arrived up to a second before it
			var delay *int64
			for _, b := range res.Backlog {
				if b.WindowDelayNs != nil {
					delay = b.WindowDelayNs
				}
			}
			if delay == nil || *delay <= -int64(time.Second) || *delay > int64(time.Since(start)) {
				t.Errorf("the windows' delay after their end %v, want within (-1 s, %v]", delay, time.Since(start))
			}
			failures := strings.Join(res.SystemFailures, "; ")
			if (tc.failure == "") != (failures == "") || !strings.Contains(failures, tc.failure) {
				t.Errorf("system failures %q, want %q", failures, tc.failure)
			}
		})
	}
}

// ensureJob makes a job's input (its group's consumer) and output (the
// receivers' group) as a sweep does before a trial.
func ensureJob(t *testing.T, in, out string) {
	t.Helper()
	for _, ep := range []string{in, out + "?group=cp"} {
		e, err := driver.Parse(ep)
		if err != nil {
			t.Fatal(err)
		}
		if err := brokers.Ensure(e); err != nil {
			t.Fatal(err)
		}
	}
}

// publish writes n messages into ep.
func publish(t *testing.T, ep string, n int, msg func(k int) []byte) {
	t.Helper()
	if n == 0 {
		return
	}
	e, err := driver.Parse(ep)
	if err != nil {
		t.Fatal(err)
	}
	p, err := brokers.NewProducer(e)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for k := range n {
		if err := p.Publish(msg(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestAJobsForgedIdentitiesAreCountedNotConsumed: a job's output tuples
// whose identity no sender of the trial made (a sender that does not
// exist, an intended time after the schedule) are counted as forged and
// left out of every count; a sequence far ahead is a gap; what the
// receiver holds stays the one stream's.
func TestAJobsForgedIdentitiesAreCountedNotConsumed(t *testing.T) {
	addr := realserver.EmbeddedNATS(t)
	in, out := "jetstream://"+addr+"/forge.in?group=job", "jetstream://"+addr+"/forge.out"
	for _, ep := range []string{in, out + "?group=cp"} {
		e, _ := driver.Parse(ep)
		if err := brokers.Ensure(e); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	publish(t, out, 4, func(k int) []byte {
		switch k {
		case 1: // sender 9 of a trial of 2
			b := windowBucket(1, start, 2, 3)
			binary.BigEndian.PutUint64(b[wire.HeaderSize+2:], 9<<56) // the first id: after the array and uint64 markers (msgpack is big-endian)
			return b
		case 2: // intended an hour after it arrives
			return windowBucket(2, start.Add(time.Hour), 2, 3)
		case 3: // a sequence far ahead
			return windowBucket(1_000_000, start, 2, 3)
		}
		return windowBucket(0, start, 2, 3)
	})
	res := runJobTrial(t, in, out, start, func(c *receiver.Config) {
		c.Senders, c.SenderThreads, c.StreamNext = 2, 1, map[uint32]uint64{0xff00: 0}
	})
	if res.Forged != 3 || res.Consumed != 5 || res.WindowCount != 15 || res.Complete || len(res.Streams) != 1 || res.Streams[0].GapBuckets != 1_000_000-3 {
		t.Errorf("forged %d, consumed %d windows counting %d, complete %v, streams %+v; want 3 forged (one of bucket 1's two, both of bucket 2's), 5 consumed counting 15, incomplete with a gap of 999997",
			res.Forged, res.Consumed, res.WindowCount, res.Complete, res.Streams)
	}
}

// TestAJobsInputMadeAgainFailsTheTrial: the job's input deleted under it
// and made again at once (as a job reconnecting does) reads well before
// and after, lag 0 both times; the receiver still sees that it is not the
// same input and says so as the system's failure.
func TestAJobsInputMadeAgainFailsTheTrial(t *testing.T) {
	addr := realserver.EmbeddedNATS(t)
	in, out := "jetstream://"+addr+"/again.in?group=job", "jetstream://"+addr+"/again.out"
	ein, _ := driver.Parse(in)
	for _, ep := range []string{in, out + "?group=cp"} {
		e, _ := driver.Parse(ep)
		if err := brokers.Ensure(e); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	publish(t, out, 3, func(k int) []byte { return windowBucket(uint64(k), start, 1, 1) })
	remade := make(chan error, 1)
	time.AfterFunc(200*time.Millisecond, func() { // after the first read, before the trial's end
		remade <- remake(ein)
	})
	res := runJobTrial(t, in, out, start, func(c *receiver.Config) { c.StreamNext = map[uint32]uint64{0xff00: 0} })
	if err := <-remade; err != nil {
		t.Fatal(err)
	}
	failures := strings.Join(res.SystemFailures, "; ")
	if !strings.Contains(failures, "the job's input "+ein.Where()+" was deleted and made again mid-trial") || !strings.Contains(failures, "consumer job made") {
		t.Errorf("system failures %q, want the input made again named", failures)
	}
	if res.Consumed != 3 || !res.Complete {
		t.Errorf("consumed %d, complete %v: what arrived is still counted", res.Consumed, res.Complete)
	}
}

// remake deletes e's stream and makes it and its group again.
func remake(e driver.Endpoint) error {
	if err := realserver.DeleteJetStream(e.Server, e.Subject); err != nil {
		return err
	}
	return brokers.Ensure(e)
}

// runJobTrial runs a receiver on a job's output out (in the group cp) as a
// sweep's trial that began at start and whose senders were done 300 ms
// later, the job's input in; set changes the configuration.
func runJobTrial(t *testing.T, in, out string, start time.Time, set func(*receiver.Config)) *tally.Result {
	t.Helper()
	cfg := receiver.Config{Receiver: trialcfg.Receiver{Schema: "window", EndTimeout: 10 * time.Second, JobQuiet: time.Second},
		Endpoints: []string{out + "?group=cp"}, Brokers: brokers, JobInput: in, TrialStart: start, SendersEnd: start.Add(300 * time.Millisecond),
		Clock: clock, Duration: time.Minute}
	set(&cfg)
	r, err := receiver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := r.Run()
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestWindowsConsumedAfterTheEndAreSampled: the consumer may still be
// consuming a job's windows when the trial ends (a consumer too slow for
// them); the backlog samples go on until it is done, so that the windows'
// delay after their end, the backlog rule's trend for a windowed job,
// covers every window consumed.
func TestWindowsConsumedAfterTheEndAreSampled(t *testing.T) {
	addr := realserver.EmbeddedNATS(t)
	in, out := "jetstream://"+addr+"/drain.in?group=job", "jetstream://"+addr+"/drain.out"
	ensureJob(t, in, out)
	start := time.Now()
	publish(t, out, 4, func(k int) []byte { return windowBucket(uint64(k), start, 8, 1) })
	res := runJobTrial(t, in, out, start, func(c *receiver.Config) { c.WorkPerTuple = 100 * time.Millisecond })
	if res.Consumed != 32 {
		t.Fatalf("consumed %d windows, want 32", res.Consumed)
	}
	last := res.Backlog[len(res.Backlog)-1]
	delays := map[int64]bool{}
	for _, b := range res.Backlog {
		if b.WindowDelayNs != nil {
			delays[*b.WindowDelayNs] = true
		}
	}
	// at least two buckets' delays (a loaded host may finish two between
	// samples), the last sample's the last bucket's
	if last.Consumed != 32 || last.WindowDelayNs == nil || len(delays) < 2 {
		t.Errorf("the last sample consumed %d (delay %v), %d distinct windows' delays; want all 32 and a delay per bucket sampled", last.Consumed, last.WindowDelayNs, len(delays))
	}
}

// tupleBucket is a map's output bucket of stream 0xff00 holding raw
// tuples [id, intended] with the given sequence numbers of sender stream
// 0 (sender 0, thread 0).
func tupleBucket(seq uint64, intended time.Time, ids ...uint64) []byte {
	tuples := make([][2]int64, len(ids))
	for i, id := range ids {
		tuples[i] = [2]int64{int64(id), intended.UnixNano()}
	}
	return sealedBucket(seq, tuples)
}

// TestAMapsOutputIsJudgedPerIdentity: the first bucket stamped a little
// before the trial's start (a sender's TSC clock off the wall clock by
// 45 ns, or by 50 ms) is the trial's, not an earlier one's; an identity
// that comes again is counted and not consumed; one moved far ahead is
// consumed and listed among the stream's highest; a tuple the declared
// filter drops is counted as unowed and not consumed; a bucket a second
// before the start is still an earlier trial's.
func TestAMapsOutputIsJudgedPerIdentity(t *testing.T) {
	addr := realserver.EmbeddedNATS(t)
	in, out := "jetstream://"+addr+"/ids.in?group=job", "jetstream://"+addr+"/ids.out"
	ensureJob(t, in, out)
	start := time.Now()
	owed := &scenarios.Owed{Items: 8, Bucket: 4, Keep: []byte{0b0111_1111}} // item 7 dropped: seq 7, 15, ...
	publish(t, out, 6, func(k int) []byte {
		switch k {
		case 0:
			return tupleBucket(0, start.Add(-45*time.Nanosecond), 0, 1, 2, 3)
		case 1:
			return tupleBucket(1, start.Add(-50*time.Millisecond), 4, 5, 6, 3) // 3 again
		case 2:
			return tupleBucket(2, start, 8, 9, 100_000_000, 7) // 100,000,000 moved ahead; 7 the filter drops
		case 3:
			return tupleBucket(3, start.Add(-time.Second), 10, 11) // an earlier trial's
		}
		return tupleBucket(uint64(k), start, uint64(8+4*k), uint64(9+4*k))
	})
	res := runJobTrial(t, in, out, start, func(c *receiver.Config) {
		c.Schema, c.Senders, c.SenderThreads, c.Owed = "raw", 1, 1, owed
		c.StreamNext = map[uint32]uint64{0xff00: 0}
	})
	if len(res.Identities) != 1 {
		t.Fatalf("identities %+v", res.Identities)
	}
	id := res.Identities[0]
	// 0-6, 8, 9, 100,000,000, 24, 25, 28, 29: 14 distinct owed
	if res.Earlier != 2 || res.Consumed != 14 || id.Distinct != 14 || id.Duplicates != 1 || id.Unowed != 1 || id.Next != 100_000_001 || id.Highest[0] != 100_000_000 || id.Highest[1] != 29 {
		t.Errorf("earlier %d, consumed %d, identities %+v; want 2 earlier, 14 consumed and distinct, 1 duplicate, 1 unowed, next 100000001, highest 100000000 then 29", res.Earlier, res.Consumed, id)
	}
}

// TestForgedWindowCountsNeitherWrapNorPass: windows whose counts would
// add up to 2^64 (four extra of 2^62), a negative count, or one only a
// uint64 holds are malformed: not added, counted with their reason,
// and the counts of the real windows stay exact.
func TestForgedWindowCountsNeitherWrapNorPass(t *testing.T) {
	addr := realserver.EmbeddedNATS(t)
	in, out := "jetstream://"+addr+"/wrap.in?group=job", "jetstream://"+addr+"/wrap.out"
	ensureJob(t, in, out)
	start := time.Now()
	huge := func(seq uint64, count []byte) []byte {
		b := windowBucket(seq, start, 1, 0)
		return append(b[:len(b)-9], count...) // the count's 9 bytes (int64, fixed) replaced
	}
	publish(t, out, 7, func(k int) []byte {
		switch k {
		case 1, 2, 3, 4:
			return windowBucket(uint64(k), start, 1, 1<<62)
		case 5:
			return windowBucket(5, start, 1, -3)
		case 6:
			b := huge(6, []byte{0xcf, 0xff, 0, 0, 0, 0, 0, 0, 1}) // uint64 above int64
			wire.PutHeader(b, wire.Header{Kind: wire.KindData, Stream: 0xff00, Seq: 6, Count: 1, BodyLen: uint32(len(b) - wire.HeaderSize)})
			return b
		}
		return windowBucket(0, start, 2, 5)
	})
	res := runJobTrial(t, in, out, start, func(c *receiver.Config) { c.StreamNext = map[uint32]uint64{0xff00: 0} })
	if res.WindowCount != 10 || res.Malformed != 6 || res.MalformedBy["tuple"] != 6 {
		t.Errorf("windows counted %d, malformed %d %v; want 10 (the two real windows) and 6 malformed (tuple)", res.WindowCount, res.Malformed, res.MalformedBy)
	}
}

// sealedBucket is a map's output bucket of stream 0xff00 holding raw
// tuples [id, intended] of sender stream 0 with their own intended times.
func sealedBucket(seq uint64, tuples [][2]int64) []byte {
	var body []byte
	for _, tu := range tuples {
		body = wire.AppendArrayLen(body, 2)
		body = wire.AppendUint64Fixed(body, wire.TupleID(0, uint64(tu[0])))
		body = wire.AppendInt64Fixed(body, tu[1])
	}
	msg := make([]byte, wire.HeaderSize, wire.HeaderSize+len(body))
	wire.PutHeader(msg, wire.Header{Kind: wire.KindData, Stream: 0xff00, Seq: seq, Count: uint32(len(tuples)), BodyLen: uint32(len(body))})
	return append(msg, body...)
}

// TestARewrittenIntendedTimeIsNotTheJobsWord: a job that held its tuples
// 350 ms and carried their sealed intended times is measured at 350 ms or
// more; the same job writing the time it writes instead (which would
// read as no latency at all) is counted as rewritten, never consumed.
func TestARewrittenIntendedTimeIsNotTheJobsWord(t *testing.T) {
	addr := realserver.EmbeddedNATS(t)
	in, out := "jetstream://"+addr+"/seal.in?group=job", "jetstream://"+addr+"/seal.out"
	ensureJob(t, in, out)
	key := wire.SealKey{0x5eed, 0xc0ffee}
	start := time.Now()
	sent := start.Add(-350 * time.Millisecond).UnixNano()
	var honest, rewritten [][2]int64
	for id := int64(0); id < 4; id++ {
		honest = append(honest, [2]int64{id, key.Seal(uint64(id), sent)})
	}
	for id := int64(4); len(rewritten) < 4; id++ {
		now := time.Now().UnixNano()
		if _, ok := key.Unseal(uint64(id), now); ok {
			continue // 1 in 256 times a written time holds by chance: not this test's case
		}
		rewritten = append(rewritten, [2]int64{id, now})
	}
	publish(t, out, 2, func(k int) []byte {
		if k == 0 {
			return sealedBucket(0, honest)
		}
		return sealedBucket(1, rewritten)
	})
	res := runJobTrial(t, in, out, start.Add(-time.Second/2), func(c *receiver.Config) {
		c.Schema, c.Senders, c.SenderThreads, c.Seal = "raw", 1, 1, key
		c.StreamNext = map[uint32]uint64{0xff00: 0}
	})
	if res.Consumed != 4 || res.Rewritten != 4 {
		t.Errorf("consumed %d, rewritten %d; want the 4 honest tuples consumed and the 4 rewritten counted", res.Consumed, res.Rewritten)
	}
	if res.Latency.Count != 4 || res.Latency.P50 < int64(350*time.Millisecond) {
		t.Errorf("latency %+v: want the honest tuples' 350 ms or more", res.Latency)
	}
}
