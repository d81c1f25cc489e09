package agent

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A broker that answers slowly does not hold an info request past
// JobLagWait, reads do not pile up while one is under way, and the
// answer it gives late is what the next request gets.
func TestJobLagAnswersInTimeWhateverTheBroker(t *testing.T) {
	release := make(chan struct{})
	var reads atomic.Int32
	r := &jobLagReader{read: func() (int64, error) {
		reads.Add(1)
		<-release
		return 42, nil
	}}
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			began := time.Now()
			_, err := r.get(100 * time.Millisecond)
			if err == nil || !strings.Contains(err.Error(), "still asking") {
				t.Errorf("a read under way: %v, want the agent still asking", err)
			}
			if took := time.Since(began); took > 2*time.Second {
				t.Errorf("an info request waited %v for the broker", took)
			}
		}()
	}
	wg.Wait()
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d reads under way at once, want 1", n)
	}
	close(release)
	lag, err := r.get(time.Second)
	if err != nil || lag != 42 {
		t.Fatalf("after the broker answered: %d, %v; want 42", lag, err)
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("the late answer was read again (%d reads)", n)
	}
}

// A read that finished long ago is not an answer now: the lag moves.
func TestJobLagIsReadAgainWhenOld(t *testing.T) {
	var reads atomic.Int64
	r := &jobLagReader{read: func() (int64, error) {
		n := reads.Add(1)
		if n == 2 {
			return 0, errors.New("broker gone")
		}
		return n, nil
	}}
	if lag, err := r.get(time.Second); lag != 1 || err != nil {
		t.Fatalf("first read: %d %v", lag, err)
	}
	r.mu.Lock()
	r.last.at = time.Now().Add(-2 * jobLagFresh)
	r.mu.Unlock()
	if _, err := r.get(time.Second); err == nil || err.Error() != "broker gone" {
		t.Fatalf("second read: %v, want the broker's error", err)
	}
}
