package stage

import (
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

// A set with live changes on gives each staged account a ring; a stage's
// changes come back through Live with its name and kind, from a cursor.
func TestSetLive(t *testing.T) {
	s := NewSet(tsc.NewClockHz(1e9), DefaultPeriod)
	s.EnableLive(16)
	a := s.Add("lane0", Lane, nil)
	s.Add("stream0", Network, nil) // a black box has no thread: no ring
	a.Start(Waiting, 10)
	a.Enter(Decoding, 20)
	a.Add(1, 100)
	a.Enter(Waiting, 30)
	a.End(40)
	st := s.Live(nil, 0)
	if len(st) != 1 || st[0].Name != "lane0" || st[0].Kind != Lane || st[0].Next != 4 {
		t.Fatalf("live stages %+v, want lane0 with 4 changes", st)
	}
	want := []LiveChange{{10, Waiting, 0}, {20, Decoding, 0}, {30, Waiting, 1}, {40, Waiting, 1}}
	for i, ch := range st[0].Changes {
		if ch != want[i] {
			t.Fatalf("change %d is %+v, want %+v", i, ch, want[i])
		}
	}
	if again := s.Live(map[string]uint64{"lane0": 4}, 0); len(again[0].Changes) != 0 || again[0].Next != 4 {
		t.Fatalf("from the head: %+v, want nothing new", again)
	}
	var off *Set
	off.EnableLive(8)
	if off.Live(nil, 0) != nil {
		t.Fatal("a nil set has live stages")
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
				a.live = newLive(1 << 16)
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
