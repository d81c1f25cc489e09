package cref

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

func build(t *testing.T) Programs {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler (cc) on PATH")
	}
	p, err := Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The reference pair moves exactly what it was told to, and measures a
// rate from what it received.
func TestReferencePair(t *testing.T) {
	p := build(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ size, count int }{{124, 20000}, {10024, 2000}} {
		r, err := p.Receive(ctx, tc.size, tc.count, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		sent, err := p.Send(ctx, r.Endpoint, tc.size, tc.count)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if sent.Messages != int64(tc.count) || got.Messages != int64(tc.count) || got.OtherMessages != 0 {
			t.Fatalf("size %d: sent %+v, received %+v; want %d each", tc.size, sent, got, tc.count)
		}
		if got.Rate <= 0 || got.Seconds <= 0 || got.Rate > 1e9 {
			t.Fatalf("size %d: implausible receive rate %+v", tc.size, got)
		}
	}
}

// Messages of another size are counted apart, and a receiver that never
// gets its count stops once the sender has gone quiet, with an error.
func TestReceiverCountsOtherSizesAndStopsWhenIdle(t *testing.T) {
	p := build(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := p.Receive(ctx, 124, 10, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, r.Endpoint, 124, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, r.Endpoint, 100, 5); err != nil {
		t.Fatal(err)
	}
	got, err := r.Wait()
	if err == nil {
		t.Fatalf("a receiver short of its count must fail; got %+v", got)
	}
	if got.Messages != 3 || got.OtherMessages != 5 {
		t.Fatalf("received %+v, want 3 of the size and 5 others", got)
	}
}
