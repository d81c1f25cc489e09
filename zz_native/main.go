package main

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

func main() {
	mode, subj := os.Args[1], os.Args[2]
	n, _ := strconv.Atoi(os.Args[3])
	nc, err := nats.Connect("nats://127.0.0.1:14222")
	if err != nil {
		panic(err)
	}
	switch mode {
	case "pub":
		msg := make([]byte, 124)
		start := time.Now()
		for i := 0; i < n; i++ {
			if err := nc.Publish(subj, msg); err != nil {
				panic(err)
			}
		}
		nc.Flush()
		fmt.Printf("pub %.0f/s\n", float64(n)/time.Since(start).Seconds())
	case "sub":
		var got atomic.Int64
		done := make(chan struct{})
		var first time.Time
		s, _ := nc.Subscribe(subj, func(*nats.Msg) {
			if got.Add(1) == 1 {
				first = time.Now()
			}
			if got.Load() == int64(n) {
				close(done)
			}
		})
		s.SetPendingLimits(-1, -1)
		nc.Flush()
		fmt.Fprintln(os.Stderr, "ready")
		<-done
		fmt.Printf("sub %.0f/s\n", float64(n)/time.Since(first).Seconds())
	}
}
