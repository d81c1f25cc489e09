package benthos

import (
	"context"
	"fmt"
	"testing"
	"time"

	_ "github.com/redpanda-data/benthos/v4/public/components/pure" // the engine's buffer, batching
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/driver/nats"
	"github.com/cloudprofiler-go/cp/internal/testkit/realserver"
	"github.com/cloudprofiler-go/cp/wire"
)

// TestOutputBatchingIsRead: cp_output's batching field groups the
// messages of its buckets (it was declared and never read): twelve input
// buckets of one tuple leave as buckets of 5, 5 and 2.
func TestOutputBatchingIsRead(t *testing.T) {
	reg := driver.NewRegistry(nats.Driver{})
	addr := realserver.EmbeddedNATS(t)
	in, out := "jetstream://"+addr+"/batching.in?group=map", "jetstream://"+addr+"/batching.out?group=cp"
	for _, ep := range []string{in, out} {
		e, _ := driver.Parse(ep)
		if err := reg.Ensure(e); err != nil {
			t.Fatal(err)
		}
	}
	env := service.NewEnvironment()
	if err := Register(env, reg, nil, nil); err != nil {
		t.Fatal(err)
	}
	b := env.NewStreamBuilder()
	if err := b.SetYAML(fmt.Sprintf("input:\n  cp_input: {url: '%s', schema: raw}\noutput:\n  cp_output: {url: '%s', schema: raw, batching: {count: 5, period: 200ms}}\n",
		in, "jetstream://"+addr+"/batching.out")); err != nil {
		t.Fatal(err)
	}
	stream, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() { _ = stream.Run(ctx) }()
	defer func() { _ = stream.Stop(context.Background()) }()

	ie, _ := driver.Parse(in)
	p, err := reg.NewProducer(ie)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 12 {
		if err := p.Publish(rawBucket(1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	oe, _ := driver.Parse(out)
	c, err := reg.NewConsumer(oe)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var counts []uint32
	for total := uint32(0); total < 12; {
		m, err := c.Next(10 * time.Second)
		if err != nil {
			t.Fatalf("after buckets of %v: %v", counts, err)
		}
		h, err := wire.ParseHeader(m)
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, h.Count)
		total += h.Count
	}
	if fmt.Sprint(counts) != "[5 5 2]" {
		t.Errorf("buckets of %v tuples, want [5 5 2]", counts)
	}
}
