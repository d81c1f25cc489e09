package stage

import (
	"testing"
)

// consumerAt is a consumer account with periods of tMin..tMax ticks,
// working from tick 0.
func consumerAt(tMin, tMax uint64) *Account {
	a := &Account{name: "consumer", kind: Consumer}
	a.EnablePeriods(tMin, tMax)
	a.Start(Working, 0)
	return a
}

// bucket processes one bucket of n tuples ending at now, as the consumer
// does: count it, then close the period if it is due.
func bucket(a *Account, n, now uint64) {
	a.Add(1, n)
	a.Close(now)
}

func TestPeriodsCountOnlyNonBlockingPeriods(t *testing.T) {
	for _, tc := range []struct {
		name        string
		idleAt      uint64 // an idle spell of 30 ticks starting here (0: none)
		wantPeriods int
		wantBlocked uint64
	}{
		// Buckets of 10 tuples every 50 ticks, T = 100: every period is two
		// buckets, 20 tuples in 100 ticks. The first close only opens one.
		{"always working", 0, 5, 0},
		// Idle from 230 to 260: the period [200, 300] saw it and is not used.
		{"an idle spell", 230, 4, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := consumerAt(100, 1600)
			for now := uint64(50); now <= 550; now += 50 {
				if tc.idleAt != 0 && now == tc.idleAt+20 {
					a.Enter(Idling, tc.idleAt)
					a.Enter(Working, tc.idleAt+30)
				}
				bucket(a, 10, now)
			}
			got, stats := a.DrainPeriods(nil)
			if len(got) != tc.wantPeriods || stats.Blocked != tc.wantBlocked {
				t.Fatalf("%d periods, %d blocked; want %d, %d (%+v)", len(got), stats.Blocked, tc.wantPeriods, tc.wantBlocked, got)
			}
			for _, p := range got {
				if p.Tuples != 20 || p.Ticks != 100 {
					t.Errorf("period %+v, want 20 tuples in 100 ticks (exact: it ends at a bucket boundary)", p)
				}
			}
			if again, _ := a.DrainPeriods(nil); len(again) != 0 {
				t.Errorf("drained twice: %d periods the second time", len(again))
			}
		})
	}
}

// A period that ends while the stage is idle is not a non-blocking one,
// even when no idle time was accounted inside it yet.
func TestPeriodClosedWhileIdleIsNotUsed(t *testing.T) {
	a := consumerAt(100, 1600)
	bucket(a, 10, 50) // opens the first period
	a.Add(1, 10)
	a.Enter(Idling, 180)
	a.closePeriod(200)
	got, stats := a.DrainPeriods(nil)
	if len(got) != 0 || stats.Blocked != 1 {
		t.Fatalf("%d periods, %d blocked; want 0, 1", len(got), stats.Blocked)
	}
}

// T doubles after adaptK clean, stable periods and halves when fewer than
// half of adaptK were clean (§III; Equation 1), within its bounds.
func TestPeriodAdapts(t *testing.T) {
	a := consumerAt(100, 400)
	now := uint64(0)
	step := func(n int, idle bool) {
		for i := 0; i < n; i++ {
			now += 50
			if idle {
				a.Enter(Idling, now-10)
				a.Enter(Working, now-5)
			}
			bucket(a, 10, now)
		}
	}
	T := func() uint64 { _, s := a.DrainPeriods(nil); return s.T }
	step(1, false) // opens the first period
	if got := T(); got != 100 {
		t.Fatalf("T starts at %d, want tMin 100", got)
	}
	step(2*adaptK, false) // 16 periods of two buckets
	if got := T(); got != 200 {
		t.Fatalf("after %d clean periods T = %d, want 200", adaptK, got)
	}
	step(4*adaptK, false)
	if got := T(); got != 400 {
		t.Fatalf("T = %d, want 400", got)
	}
	step(8*adaptK, false)
	if got := T(); got != 400 {
		t.Fatalf("T = %d, want it kept at tMax 400", got)
	}
	step(8*adaptK, true) // every period sees an idle spell
	if got := T(); got != 200 {
		t.Fatalf("after %d blocked periods T = %d, want 200", adaptK, got)
	}
	step(16*adaptK, true)
	if got := T(); got != 100 {
		t.Fatalf("T = %d, want it kept at tMin 100", got)
	}
}

// Periods the reader does not drain in time are counted as dropped, never
// overwritten under it.
func TestPeriodRingDropsWhenTheReaderFallsBehind(t *testing.T) {
	a := consumerAt(10, 10)
	now := uint64(0)
	for i := 0; i < periodRing+101; i++ {
		now += 10
		bucket(a, 1, now)
	}
	got, stats := a.DrainPeriods(nil)
	if len(got) != periodRing || stats.Dropped != 100 {
		t.Fatalf("%d periods, %d dropped; want %d, 100", len(got), stats.Dropped, periodRing)
	}
	now += 10
	bucket(a, 1, now)
	if got, _ := a.DrainPeriods(nil); len(got) != 1 {
		t.Fatalf("after a drain, %d periods, want 1", len(got))
	}
}

func TestPeriodsOffByDefault(t *testing.T) {
	a := &Account{name: "consumer", kind: Consumer}
	a.Start(Working, 0)
	bucket(a, 10, 100)
	bucket(a, 10, 200)
	if got, stats := a.DrainPeriods(nil); len(got) != 0 || stats != (PeriodStats{}) || a.PeriodsOn() {
		t.Fatalf("periods %v, stats %+v without EnablePeriods", got, stats)
	}
	var nilAcct *Account
	nilAcct.Close(5)
	nilAcct.EnablePeriods(1, 2)
	if nilAcct.PeriodsOn() {
		t.Fatal("a nil account has periods")
	}
}

// BenchmarkAccountPerBucket is the accounting's cost per bucket on the
// stage's own thread (two state changes, the count, the period check), with
// and without service-rate periods: what the estimates add to a stage.
func BenchmarkAccountPerBucket(b *testing.B) {
	for _, c := range []struct {
		name string
		t    uint64 // period, ticks (0: periods off)
	}{{"periods-off", 0}, {"periods-on", 1000}, {"a-period-every-bucket", 50}} {
		b.Run(c.name, func(b *testing.B) {
			a := &Account{name: "consumer", kind: Consumer}
			if c.t > 0 {
				a.EnablePeriods(c.t, c.t) // 1000: ~a period every 10 buckets; 50: at T = tMin under load
			}
			a.Start(Idling, 1)
			now := uint64(1)
			var buf []Period
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				now += 100
				a.Enter(Working, now)
				a.Add(1, 100)
				a.Close(now + 90)
				a.Enter(Idling, now+90)
				if i&1023 == 0 {
					buf, _ = a.DrainPeriods(buf[:0])
				}
			}
		})
	}
}

// recorder is an ActivityLog that keeps what it is given.
type recorder struct{ tsc, id []uint64 }

func (r *recorder) LogTSAt(tsc, id uint64) { r.tsc, r.id = append(r.tsc, tsc), append(r.id, id) }

// Every real state change is logged once, at its TSC, with the state
// entered and the items so far; a recoloured receive call is logged at the
// instant its interval began; End logs the state the stage ends in.
func TestActivitiesLogged(t *testing.T) {
	a := &Account{name: "lane0", kind: Lane}
	var rec recorder
	opened := ""
	if err := a.LogActivitiesOn(func(ch string) (ActivityLog, error) { opened = ch; return &rec, nil }); err != nil || opened != "activity.lane0" {
		t.Fatalf("opened %q, %v", opened, err)
	}
	a.Start(Waiting, 100)
	a.Enter(Waiting, 150) // no change: not logged
	a.Enter(Decoding, 200)
	a.Add(1, 10)
	a.Enter(Waiting, 300)
	a.Recolour(Decoding) // the message was there: 300 on is decoding
	a.Add(1, 10)
	a.Enter(Starved, 400)
	a.Add(1, 10)
	a.End(450) // closes the last activity: the state it is in, at the end
	type ev struct {
		tsc   uint64
		state int
		items uint64
	}
	var got []ev
	for i := range rec.id {
		st, items := ActivityOf(rec.id[i])
		got = append(got, ev{rec.tsc[i], st, items})
	}
	want := []ev{{100, Waiting, 0}, {200, Decoding, 0}, {300, Waiting, 1}, {300, Decoding, 1}, {400, Starved, 2}, {450, Starved, 3}}
	if len(got) != len(want) {
		t.Fatalf("logged %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	var nilAcct *Account
	nilAcct.End(500) // no accounting: nothing to close
	if err := nilAcct.LogActivitiesOn(func(string) (ActivityLog, error) { t.Fatal("opened for a nil account"); return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if st, items := ActivityOf(ActivityID(Starved, 1<<60|5)); st != Starved || items != 5 {
		t.Errorf("ActivityOf(ActivityID) = %d, %d: items wrap modulo 2^56", st, items)
	}
}

// nopLog is an ActivityLog that keeps nothing.
type nopLog struct{ n uint64 }

func (l *nopLog) LogTSAt(tsc, id uint64) { l.n += tsc ^ id }

func TestLoggingActivitiesDoesNotAllocate(t *testing.T) {
	a := &Account{name: "thread0", kind: Sender}
	a.EnablePeriods(5, 40)
	a.LogActivities(&nopLog{})
	now := uint64(1)
	if n := testing.AllocsPerRun(1000, func() {
		now += 10
		a.Enter(Sending, now)
		a.Close(now)
		a.Add(1, 100)
		a.Enter(Pacing, now+5)
	}); n != 0 {
		t.Fatalf("%v allocations per bucket with an activity log, want 0", n)
	}
}
