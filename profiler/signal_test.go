package profiler

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// When run as a child (CP_PROFILER_CHILD=path), the test binary logs
// records to a buffered channel until SIGTERM, then reports how many.
func TestMain(m *testing.M) {
	if path := os.Getenv("CP_PROFILER_CHILD"); path != "" {
		child(path)
		return
	}
	os.Exit(m.Run())
}

func child(path string) {
	p := New(time.Hour)
	ch, err := p.Open("stream", Config{Handler: HandlerBuffered, Path: path, BlockSize: 4096, Workers: 2})
	if err != nil {
		os.Exit(2)
	}
	var stop atomic.Bool
	stopped := make(chan uint64)
	// The program's one place for signals: the context they cancel.
	ctx, _ := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	closed := CloseWhenDone(ctx, p, func() {
		stop.Store(true)
		n := <-stopped
		// the parent reads this count; stdout is unbuffered
		os.Stdout.WriteString(strconv.FormatUint(n, 10) + "\n")
	})
	os.Stdout.WriteString("ready\n")
	var n uint64
	for !stop.Load() {
		ch.LogTS(n)
		n++
		if n%50000 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	stopped <- n
	if err := <-closed; err != nil {
		os.Exit(130)
	}
	os.Exit(0)
}

// TestSIGTERMLosesNoRecord sends SIGTERM to a real process that is logging
// as fast as it can: the file must hold exactly the records it logged, in
// order, with nothing torn.
func TestSIGTERMLosesNoRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stream.log")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CP_PROFILER_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("child did not start: %q", sc.Text())
	}
	time.Sleep(300 * time.Millisecond) // mid-stream
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !sc.Scan() {
		t.Fatal("child did not report its count")
	}
	n, err := strconv.ParseUint(sc.Text(), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child exit: %v", err)
	}
	recs := readAll(t, path)
	if uint64(len(recs)) != n || n < 10000 {
		t.Fatalf("the child logged %d records, the file holds %d", n, len(recs))
	}
	for i, r := range recs {
		if r.ID != uint64(i) {
			t.Fatalf("record %d has id %d: out of order or lost", i, r.ID)
		}
	}
	t.Logf("SIGTERM after %d records: all %d in the file, in order", n, len(recs))
}
