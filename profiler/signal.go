package profiler

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// CloseOnSignal makes SIGINT and SIGTERM flush every channel before the
// process exits: stopWriters is called first (it must return once no
// goroutine calls LogTS any more), then Close writes every buffered record,
// then the process exits with status 0 (130 if closing failed). A second
// signal during the flush is ignored, so the flush always completes.
func CloseOnSignal(p *Profiler, stopWriters func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		if stopWriters != nil {
			stopWriters()
		}
		code := 0
		if err := p.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "profiler: flush on signal: %v\n", err)
			code = 130
		}
		os.Exit(code)
	}()
}
