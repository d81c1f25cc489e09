package sender

import (
	"fmt"
	"github.com/cloudprofiler-go/cp/driver"

	"github.com/cloudprofiler-go/cp/internal/membudget"
	"github.com/cloudprofiler-go/cp/internal/numfmt"
	"github.com/cloudprofiler-go/cp/wire"
)

// A trial's fields are each bounded, but their product is not: 256
// threads, each with its own buckets of 2^20 distinct 256-byte tuples,
// need 128 GiB. Every configuration's estimate is checked against a memory
// budget before anything is allocated.

// DefaultMemoryBudget is half of the host's memory, or 4 GiB where that
// cannot be read (membudget.Default).
func DefaultMemoryBudget() int64 { return membudget.Default() }

// MemoryEstimate is an upper bound of what the configuration allocates,
// in bytes, with the part that dominates it named: the distinct tuples
// encoded once; each thread's own buckets of all of them (a thread patches
// its buckets in place, so no two threads can share one); each thread's
// socket queue of up to HWM buckets; and a tabulated shape's table.
// Call it on a validated configuration.
func (c *Config) MemoryEstimate() (int64, string) {
	tuple := int64(c.Scenario.MaxTupleSize())
	distinct := int64(c.Scenario.Distinct)
	bucket := int64(c.BucketSize)
	encoded := distinct * tuple
	buckets := (distinct + bucket - 1) / bucket
	perThreadBuckets := buckets * (bucket*tuple + wire.HeaderSize + 64)
	if c.jsonEvents() { // each bucket of one tuple has its JSON event too
		perThreadBuckets += buckets * (2*tuple + 256)
	}
	bucketBytes := bucket*tuple + wire.HeaderSize
	hwm := int64(c.HWM)
	if hwm == 0 {
		hwm = 1000
	}
	queue := hwm * bucketBytes
	threads := int64(c.Threads)
	table := int64(0)
	switch c.Shape.Kind {
	case "step", "ramp", "sine", "replay":
		table = (maxGrid + 2) * 8
	}
	total := encoded + threads*(perThreadBuckets+queue) + table
	why := fmt.Sprintf("%d thread(s), each with its own buckets of %d distinct tuples of up to %d B (%s) and a queue of up to %d buckets of %s (--hwm)",
		threads, distinct, tuple, numfmt.Bytes(perThreadBuckets), hwm, numfmt.Bytes(bucketBytes))
	return total, why
}

// checkMemory refuses a configuration whose estimate is above its budget.
func (c *Config) checkMemory() error {
	budget := c.MemoryBudget
	if budget <= 0 {
		budget = DefaultMemoryBudget()
	}
	need, why := c.MemoryEstimate()
	if need <= budget {
		return nil
	}
	return fmt.Errorf("this run needs up to %s of memory (%s): above the memory budget of %s (dgsend --memory-budget, default half of the host's memory); "+
		"use fewer threads, fewer distinct tuples, smaller buckets or a lower --hwm", numfmt.Bytes(need), why, numfmt.Bytes(budget))
}

// jsonEvents says whether any endpoint sends JSON events.
func (c *Config) jsonEvents() bool {
	for _, ep := range c.Endpoints {
		if _, json := driver.JSONEndpoint(ep); json {
			return true
		}
	}
	return false
}
