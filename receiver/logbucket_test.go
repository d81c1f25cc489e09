package receiver

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/profiler"
	"github.com/cloudprofiler-go/cp/scenarios"
)

// logBucket logs every tuple at the given instant, whether the ids are
// consecutive (one range) or not (one record each).
func TestLogBucket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.log")
	p := profiler.New(time.Hour)
	ch, err := p.Open("b", profiler.Config{Handler: profiler.HandlerBuffered, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	tuples := func(ids ...uint64) []scenarios.Tuple {
		out := make([]scenarios.Tuple, len(ids))
		for i, id := range ids {
			out[i].ID = id
		}
		return out
	}
	logBucket(ch, 100, tuples(5, 6, 7))
	logBucket(ch, 200, tuples(9, 3, 4))
	logBucket(ch, 300, nil)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	var got []profiler.Record
	if err := readLog(path, &got); err != nil {
		t.Fatal(err)
	}
	want := []profiler.Record{{TSC: 100, ID: 5}, {TSC: 100, ID: 6}, {TSC: 100, ID: 7}, {TSC: 200, ID: 9}, {TSC: 200, ID: 3}, {TSC: 200, ID: 4}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("logged %v, want %v", got, want)
	}
}

func readLog(path string, out *[]profiler.Record) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bad, err := profiler.ReadBlocks(f, func(recs []profiler.Record) error { *out = append(*out, recs...); return nil })
	if err == nil && len(bad) > 0 {
		err = fmt.Errorf("damaged: %v", bad)
	}
	return err
}
