package profiler

import "context"

// CloseWhenDone flushes every channel once ctx is done (a program cancels
// it on SIGINT or SIGTERM, in its one place for signals): stopWriters is
// called first (it must return once no goroutine calls LogTS any more),
// then Close writes every buffered record. The returned channel gets
// Close's error (nil: every record is on disk); the program decides how to
// exit. The library handles no signal and never exits the process.
func CloseWhenDone(ctx context.Context, p *Profiler, stopWriters func()) <-chan error {
	done := make(chan error, 1)
	context.AfterFunc(ctx, func() {
		if stopWriters != nil {
			stopWriters()
		}
		done <- p.Close()
	})
	return done
}
