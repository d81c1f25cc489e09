package main

import (
	"sync"

	cpbenthos "github.com/cloudprofiler-go/cp/sut/benthos"
)

// whenConnected calls announce once, when inputs cp_inputs and a
// cp_output have connected: the job says it reads only once it does (the
// engine connects after it starts, and a sweep started on the word would
// find its first events dropped as late by the job's windows).
func whenConnected(inputs int, announce func()) cpbenthos.Connected {
	var mu sync.Mutex
	in, out, done := 0, 0, false
	return func(plugin, _ string) {
		mu.Lock()
		defer mu.Unlock()
		if plugin == "cp_input" {
			in++
		} else {
			out++
		}
		if !done && in >= inputs && out >= 1 {
			done = true
			announce()
		}
	}
}
