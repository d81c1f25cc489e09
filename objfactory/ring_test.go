package objfactory

import (
	"sync"
	"testing"
)

func TestNewRingRejectsBadCapacity(t *testing.T) {
	for _, c := range []int{0, -1, 3, 100} {
		if _, err := NewRing[int](c); err == nil {
			t.Errorf("capacity %d accepted", c)
		}
	}
}

func TestRingFullEmpty(t *testing.T) {
	r, _ := NewRing[int](4)
	if _, ok := r.Pop(); ok {
		t.Fatal("pop from empty ring succeeded")
	}
	for i := 0; i < 4; i++ {
		if !r.Push(i) {
			t.Fatalf("push %d into ring with %d items failed", i, r.Len())
		}
	}
	if r.Push(99) {
		t.Fatal("push into full ring succeeded")
	}
	if r.Len() != 4 {
		t.Fatalf("Len = %d, want 4", r.Len())
	}
	for i := 0; i < 4; i++ {
		if v, ok := r.Pop(); !ok || v != i {
			t.Fatalf("pop = %d,%v want %d", v, ok, i)
		}
	}
}

// TestRingConcurrentOrderAndLoss runs one producer and one consumer (use
// -race) and checks every item arrives exactly once and in order.
func TestRingConcurrentOrderAndLoss(t *testing.T) {
	const n = 200000
	r, _ := NewRing[uint64](64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := uint64(1); i <= n; {
			if r.Push(i) {
				i++
			}
		}
	}()
	var want uint64 = 1
	for want <= n {
		v, ok := r.Pop()
		if !ok {
			continue
		}
		if v != want {
			t.Fatalf("got %d, want %d (lost or reordered)", v, want)
		}
		want++
	}
	wg.Wait()
	if _, ok := r.Pop(); ok {
		t.Fatal("extra item after all were consumed")
	}
}

func BenchmarkRingPushPop(b *testing.B) {
	r, _ := NewRing[*Bucket](256)
	x := &Bucket{}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r.Push(x)
		r.Pop()
	}
}

func BenchmarkRingCrossThread(b *testing.B) {
	r, _ := NewRing[*Bucket](256)
	x := &Bucket{}
	done := make(chan struct{})
	go func() {
		for i := 0; i < b.N; {
			if _, ok := r.Pop(); ok {
				i++
			}
		}
		close(done)
	}()
	b.ReportAllocs()
	for i := 0; i < b.N; {
		if r.Push(x) {
			i++
		}
	}
	<-done
}
