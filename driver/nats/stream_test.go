package nats

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cloudprofiler-go/cp/driver"
	"github.com/cloudprofiler-go/cp/driver/embedded"
)

// TestAJobsStreamMadeMeanwhileIsTaken: when a job makes a stream of its
// own for the subject between the harness's look-up and its create (the
// receiver agent and cpjob start together), the harness takes the job's
// stream instead of failing with "subjects overlap".
func TestAJobsStreamMadeMeanwhileIsTaken(t *testing.T) {
	srv, err := embedded.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	e := driver.Endpoint{Driver: driver.JetStream, Server: "nats://" + srv.Addr(), Subject: "filter1.in", Storage: "file"}
	nc, err := connect(e, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS_OWN", Subjects: []string{"filter1.in"}}); err != nil {
		t.Fatal(err)
	}
	s, err := createCapturing(ctx, js, e)
	if err != nil || s.CachedInfo().Config.Name != "JOBS_OWN" {
		t.Fatalf("%v, %v: want the job's stream", s, err)
	}
}
