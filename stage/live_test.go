package stage

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/tsc"
)

// The ring keeps the latest changes; a reader gets each change once, in
// order, and is told how many after its cursor it did not get.
func TestLiveKeepsTheLatestChanges(t *testing.T) {
	cases := []struct {
		name                string
		size, written       int
		from                uint64
		limit               int
		wantFirst, wantNext uint64
		wantLost            uint64
	}{
		{"all from the start", 8, 5, 0, 0, 0, 5, 0},
		{"from a cursor", 8, 5, 3, 0, 3, 5, 0},
		{"at the head: nothing new", 8, 5, 5, 0, 5, 5, 0},
		{"lapped: the oldest kept is written−size+1", 8, 20, 2, 0, 13, 20, 11},
		{"limit keeps the latest", 8, 7, 0, 3, 4, 7, 4},
		{"a cursor past the head starts afresh", 8, 5, 50, 0, 0, 5, 0},
		{"size rounds up to a power of two", 5, 9, 0, 0, 2, 9, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newLive(c.size)
			for i := 0; i < c.written; i++ {
				l.LogTSAt(uint64(100+i), ActivityID(i%3, uint64(i)))
			}
			got, next, lost := l.read(c.from, c.limit, nil)
			if next != c.wantNext || lost != c.wantLost || uint64(len(got)) != c.wantNext-c.wantFirst {
				t.Fatalf("read %d changes, next %d, lost %d; want %d, %d, %d", len(got), next, lost, c.wantNext-c.wantFirst, c.wantNext, c.wantLost)
			}
			for k, ch := range got {
				i := c.wantFirst + uint64(k)
				if ch.TSC != 100+i || ch.Items != i || ch.State != int(i%3) {
					t.Fatalf("change %d is %+v, want TSC %d state %d items %d", k, ch, 100+i, i%3, i)
				}
			}
		})
	}
}

// A reader racing the writer never gets a torn or overwritten change:
// every change it gets is the one written at its index, and cursor, lost
// and changes always add up.
func TestLiveReaderRacingTheWriter(t *testing.T) {
	l := newLive(64)
	const total = 200000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := uint64(1); i <= total; i++ {
			l.LogTSAt(i, ActivityID(int(i%3), i))
		}
	}()
	var cursor, got, lost uint64
	deadline := time.Now().Add(20 * time.Second)
	for cursor < total && time.Now().Before(deadline) {
		changes, next, l2 := l.read(cursor, 0, nil)
		for k, ch := range changes {
			want := cursor + l2 + uint64(k) + 1 // change i carries TSC i+1
			if ch.TSC != want || ch.Items != want || ch.State != int(want%3) {
				t.Fatalf("change %+v where the one written at that index has TSC %d", ch, want)
			}
		}
		if next != cursor+l2+uint64(len(changes)) {
			t.Fatalf("cursor %d + lost %d + %d changes != next %d", cursor, l2, len(changes), next)
		}
		got, lost, cursor = got+uint64(len(changes)), lost+l2, next
	}
	wg.Wait()
	if got+lost != total {
		t.Fatalf("got %d and lost %d of %d changes", got, lost, total)
	}
	t.Logf("read %d changes, %d overwritten first", got, lost)
}

// A set with live changes on keeps nothing until the first Live, which
// returns each staged stage's current state (since when, with its items);
// from then on every change, of stages there and stages added later.
func TestSetLive(t *testing.T) {
	s := NewSet(tsc.NewClockHz(1e9), DefaultPeriod)
	s.EnableLive(16)
	a := s.Add("lane0", Lane, nil)
	s.Add("stream0", Network, nil) // a black box has no thread: no ring
	a.Start(Waiting, 10)
	a.Enter(Decoding, 20)
	a.Add(1, 100)
	if a.live.Load() != nil {
		t.Fatal("a ring before anyone asked")
	}
	st := s.Live(nil, 0)
	if len(st) != 1 || st[0].Name != "lane0" || st[0].Kind != Lane || st[0].Next != 1 || st[0].Changes[0] != (LiveChange{20, Decoding, 1}) {
		t.Fatalf("first Live: %+v, want lane0 decoding since 20", st)
	}
	a.Enter(Waiting, 30)
	a.End(40)
	c := s.Add("consumer", Consumer, nil)
	c.Start(Working, 35)
	st = s.Live(map[string]uint64{"lane0": 1}, 0)
	want := map[string][]LiveChange{"lane0": {{30, Waiting, 1}, {40, Waiting, 1}}, "consumer": {{35, Working, 0}}}
	for _, x := range st {
		if fmt.Sprint(x.Changes) != fmt.Sprint(want[x.Name]) {
			t.Fatalf("%s: %+v, want %+v", x.Name, x.Changes, want[x.Name])
		}
	}
	if len(st) != 2 {
		t.Fatalf("%d live stages, want lane0 and consumer", len(st))
	}
	if again := s.Live(map[string]uint64{"lane0": 3, "consumer": 1}, 0); len(again[0].Changes)+len(again[1].Changes) != 0 {
		t.Fatalf("from the heads: %+v, want nothing new", again)
	}
	var off *Set
	off.EnableLive(8)
	if off.Live(nil, 0) != nil {
		t.Fatal("a nil set has live stages")
	}
	unwatched := NewSet(tsc.NewClockHz(1e9), DefaultPeriod)
	if u := unwatched.Add("lane0", Lane, nil); unwatched.Live(nil, 0) != nil || u.live.Load() != nil {
		t.Fatal("live changes without EnableLive")
	}
}

// BenchmarkStateChange is the writer's cost of a state change (two per
// bucket in a lane), without and with the live ring.
func BenchmarkStateChange(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "live"
		}
		b.Run(name, func(b *testing.B) {
			a := &Account{name: "lane0", kind: Lane}
			if on {
				a.live.Store(newLive(1 << 16))
			}
			b.ReportAllocs()
			now := uint64(1)
			for i := 0; i < b.N; i++ {
				now += 100
				a.Enter(Decoding, now)
				a.Add(1, 100)
				a.Enter(Waiting, now+50)
			}
		})
	}
}

// A live view starting while the stage runs: the first Live gives the
// ring to a running writer; every change read after it is in order, and
// the race detector sees the hand-over synchronised.
func TestLiveStartsWhileTheStageRuns(t *testing.T) {
	s := NewSet(tsc.NewClockHz(1e9), DefaultPeriod)
	s.EnableLive(1 << 10)
	a := s.Add("lane0", Lane, nil)
	a.Start(Waiting, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(1); i <= 200000; i++ {
			a.Enter(int(i%2), 10*i) // Decoding, Waiting, ...
			a.Add(1, 1)
		}
	}()
	var cursor uint64
	var prev uint64
	reads := 0
	for running := true; running; reads++ {
		select {
		case <-done:
			running = false
		default:
		}
		st := s.Live(map[string]uint64{"lane0": cursor}, 0)
		for _, c := range st[0].Changes {
			if c.TSC < prev {
				t.Fatalf("change at %d after one at %d", c.TSC, prev)
			}
			prev = c.TSC
		}
		cursor = st[0].Next
	}
	if cursor == 0 {
		t.Fatal("no change read")
	}
	t.Logf("%d reads, cursor at %d", reads, cursor)
}
