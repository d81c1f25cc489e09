package receiver

import "testing"

func TestStreamTrack(t *testing.T) {
	for _, tc := range []struct {
		name                           string
		seqs                           []uint64
		outOfSeq, dups, missing, stale uint64
	}{
		{"in order", []uint64{0, 1, 2, 3}, 0, 0, 0, 0},
		{"first bucket lost", []uint64{1, 2}, 1, 0, 1, 0},
		{"gap", []uint64{0, 1, 4, 5}, 1, 0, 2, 0},
		{"gap filled late", []uint64{0, 2, 1, 3}, 2, 0, 0, 0},
		{"duplicate", []uint64{0, 1, 1, 2}, 0, 1, 0, 0},
		{"duplicate after gap", []uint64{0, 3, 3}, 1, 1, 2, 0},
		// 0 is 5000 behind the highest number seen: stale, discarded
		{"big jump then old duplicate", []uint64{0, 5000, 0}, 1, 0, 4999, 1},
		{"bucket 5 re-sent after 1500", append(seq(0, 1501), 5), 0, 0, 0, 1},
		{"exactly at the window's edge", append(seq(0, 1500), 1500-seqWindow), 0, 1, 0, 0},
		{"repeat of skipped seq is not a duplicate", []uint64{0, 3, 2, 1}, 3, 0, 0, 0},
	} {
		var s stream
		discarded := uint64(0)
		for _, q := range tc.seqs {
			if s.track(q) {
				discarded++
			}
		}
		if s.outOfSeq.Load() != tc.outOfSeq || s.duplicates.Load() != tc.dups || discarded != tc.dups+tc.stale || s.missing.Load() != tc.missing || s.stale.Load() != tc.stale {
			t.Errorf("%s: outOfSeq=%d dups=%d missing=%d stale=%d, want %d %d %d %d", tc.name,
				s.outOfSeq.Load(), s.duplicates.Load(), s.missing.Load(), s.stale.Load(), tc.outOfSeq, tc.dups, tc.missing, tc.stale)
		}
	}
}

func TestStreamTrackWrapsWindow(t *testing.T) {
	var s stream
	for q := uint64(0); q < 10*seqWindow; q++ {
		if s.track(q) {
			t.Fatalf("seq %d flagged duplicate", q)
		}
	}
	if !s.track(10*seqWindow - 5) {
		t.Fatal("recent duplicate not detected after the window wrapped")
	}
}

func seq(from, to uint64) []uint64 {
	var out []uint64
	for q := from; q < to; q++ {
		out = append(out, q)
	}
	return out
}

// TestAJobsStreamAcrossTrials: a job's output stream goes on where an
// earlier trial left it (a bucket lost in between is a gap), is joined at
// its first bucket when never seen, and starts again at 0 when the job
// did.
func TestAJobsStreamAcrossTrials(t *testing.T) {
	for _, tc := range []struct {
		name          string
		next          map[uint32]uint64
		join          bool
		seqs          []uint64
		from, missing uint64
	}{
		{"goes on", map[uint32]uint64{7: 500}, true, []uint64{500, 501}, 500, 0},
		{"a bucket lost between trials", map[uint32]uint64{7: 500}, true, []uint64{502, 503}, 500, 2},
		{"never seen: joined", nil, true, []uint64{500, 501}, 500, 0},
		{"the job started again", map[uint32]uint64{7: 500}, true, []uint64{0, 1}, 0, 0},
		{"not a job: from 0", nil, false, []uint64{500, 501}, 0, 500},
	} {
		tab := streamTable{next: tc.next, join: tc.join}
		s := tab.get(7)
		for _, q := range tc.seqs {
			s.track(q)
		}
		if s.from != tc.from || s.missing.Load() != tc.missing || s.next != tc.seqs[len(tc.seqs)-1]+1 {
			t.Errorf("%s: from %d, missing %d, next %d; want %d, %d, %d", tc.name, s.from, s.missing.Load(), s.next, tc.from, tc.missing, tc.seqs[len(tc.seqs)-1]+1)
		}
	}
}
