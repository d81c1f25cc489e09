package profiler

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Per-call costs on one thread, next to the paper's Table 3 (C++): Null
// 3 ns, SPC 3 ns, MPC 9 ns, XoY 13 ns, buffered ID 63-73 ns, ID 377 ns.
// Targets for Go: Null and SPC <= 3 ns, MPC <= 10, XoY and Downsample <= 13,
// buffered ID <= 25 on the calling thread.
func benchHandler(b *testing.B, cfg Config, paperNs float64) {
	dir := b.TempDir()
	if cfg.Path == "" && cfg.Handler != HandlerNull && cfg.Handler != HandlerSPC && cfg.Handler != HandlerMPC {
		cfg.Path = filepath.Join(dir, "log")
	}
	p := New(time.Hour)
	ch, err := p.Open("bench", cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ch.LogTS(uint64(i))
	}
	b.StopTimer()
	b.ReportMetric(paperNs, "paper-ns/op")
	if err := p.Close(); err != nil {
		b.Fatal(err)
	}
	if cfg.Path != "" {
		if st, err := os.Stat(cfg.Path); err == nil && b.N > 1000 {
			b.ReportMetric(float64(st.Size())/float64(b.N), "file-bytes/event")
		}
	}
}

func BenchmarkNull(b *testing.B) { benchHandler(b, Config{Handler: HandlerNull}, 3) }
func BenchmarkSPC(b *testing.B)  { benchHandler(b, Config{Handler: HandlerSPC}, 3) }
func BenchmarkMPC(b *testing.B)  { benchHandler(b, Config{Handler: HandlerMPC}, 9) }
func BenchmarkXoY(b *testing.B)  { benchHandler(b, Config{Handler: HandlerXoY, X: 1, Y: 100}, 13) }
func BenchmarkDownsample(b *testing.B) {
	benchHandler(b, Config{Handler: HandlerDownsample, Every: 100}, 13)
}
func BenchmarkBufferedZstd(b *testing.B) {
	benchHandler(b, Config{Handler: HandlerBuffered, Workers: 1}, 68)
}
func BenchmarkBufferedNone(b *testing.B) {
	benchHandler(b, Config{Handler: HandlerBuffered, Codec: "none"}, 68)
}
func BenchmarkIdentity(b *testing.B) { benchHandler(b, Config{Handler: HandlerIdentity}, 377) }

//go:noinline
func emptyCall(uint64) {}

// BenchmarkReferenceCall is an empty, non-inlined function call: the
// reference measured in the same run (the host's speed varies ~2x).
func BenchmarkReferenceCall(b *testing.B) {
	for i := 0; i < b.N; i++ {
		emptyCall(uint64(i))
	}
}

// BenchmarkBufferedSustained logs b.N events with zstd to a file and closes
// it (the flush included): events per second per thread, sustained to disk
// (the paper's per-thread load in Fig. 13 is 12.5 M events/s), and the
// compression ratio against 16 raw bytes per event.
func BenchmarkBufferedSustained(b *testing.B) {
	path := filepath.Join(b.TempDir(), "sustained.log")
	p := New(time.Hour)
	ch, err := p.Open("s", Config{Handler: HandlerBuffered, Path: path, Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		ch.LogTS(uint64(i))
	}
	if err := p.Close(); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds()/1e6, "Mevents/s")
	if st, err := os.Stat(path); err == nil {
		b.ReportMetric(float64(b.N)*16/float64(st.Size()), "compression-ratio")
	}
}
