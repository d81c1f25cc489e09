package discover

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/cloudprofiler-go/cp/internal/testkit/dnszone"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec, want, err string
	}{
		{"dns:cp-sender.cp.svc.cluster.local", "dns:cp-sender.cp.svc.cluster.local:9101", ""},
		{"dns:cp-sender:7000", "dns:cp-sender:7000", ""},
		{"srv:_control._tcp.cp-sender.cp.svc.cluster.local", "srv:_control._tcp.cp-sender.cp.svc.cluster.local", ""},
		{"cp-sender", "", "want dns:NAME"},
		{"http://cp-sender", "", "want dns:NAME"},
		{"dns:", "", "want dns:NAME"},
		{"dns:cp-sender:0", "", "not 1..65535"},
		{"dns:cp-sender:http", "", "not 1..65535"},
		{"dns:cp sender", "", "no DNS name has"},
		{"dns:../etc/passwd", "", "empty or longer"},
		{"dns:a..b", "", "empty or longer"},
	} {
		s, err := Parse(tc.spec, 9101)
		switch {
		case tc.err != "" && (err == nil || !contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q) = %v, %v; want an error with %q", tc.spec, s, err, tc.err)
		case tc.err == "" && (err != nil || s.String() != tc.want):
			t.Errorf("Parse(%q) = %v, %v; want %s", tc.spec, s, err, tc.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestAgentsWaitForTheCountAskedFor: the Service starts with one ready pod
// and gets its second while the lookup waits; the answer is both, sorted.
func TestAgentsWaitForTheCountAskedFor(t *testing.T) {
	z := serveZone(t)
	z.Set("cp-sender.cp.svc.cluster.local", "10.0.0.9")
	var seen []int
	var lookups atomic.Int32
	go func() {
		for lookups.Load() < 3 {
			time.Sleep(10 * time.Millisecond)
		}
		z.Set("cp-sender.cp.svc.cluster.local", "10.0.0.9", "10.0.0.10")
	}()
	src, _ := Parse("dns:cp-sender.cp.svc.cluster.local", 9101)
	got, err := Agents(context.Background(), src, Options{Want: 2, Timeout: 10 * time.Second, Interval: 20 * time.Millisecond,
		Resolver: z.Resolver(), Progress: func(n int) { seen = append(seen, n); lookups.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.10:9101", "10.0.0.9:9101"}
	if !slices.Equal(got, want) {
		t.Errorf("agents %v, want %v", got, want)
	}
	if len(seen) < 3 || seen[0] != 1 {
		t.Errorf("progress %v: want the one-agent lookups reported before the answer", seen)
	}
}

// TestAgentsRefuseFewer: a bounded wait that ends with fewer agents (or
// none: the Service has no ready pod, NXDOMAIN) is a ShortError naming the
// counts, never a partial list.
func TestAgentsRefuseFewer(t *testing.T) {
	z := serveZone(t)
	z.Set("cp-receiver.cp", "10.0.1.1")
	for _, tc := range []struct {
		name        string
		want, found int
	}{
		{"cp-receiver.cp", 2, 1},
		{"cp-nothing.cp", 1, 0},
		{"cp-receiver.cp", 0, 0},
	} {
		src, _ := Parse("dns:"+tc.name, 9102)
		start := time.Now()
		got, err := Agents(context.Background(), src, Options{Want: tc.want, Timeout: 300 * time.Millisecond, Interval: 50 * time.Millisecond, Resolver: z.Resolver()})
		if got != nil {
			t.Errorf("%s want %d: got agents %v with %v", tc.name, tc.want, got, err)
		}
		if tc.want == 0 {
			if err == nil {
				t.Error("want 0 agents: no error")
			}
			continue
		}
		var short *ShortError
		if !errors.As(err, &short) || short.Found != tc.found || short.Want != tc.want {
			t.Fatalf("%s want %d: err %v, want a ShortError with %d found", tc.name, tc.want, err, tc.found)
		}
		if el := time.Since(start); el < 250*time.Millisecond || el > 5*time.Second {
			t.Errorf("%s: gave up after %v, want about the 300ms bound", tc.name, el)
		}
	}
}

// TestAgentsMoreThanAsked: a Service with more ready pods than asked for is
// refused too (the sweep would leave agents idle or mis-share the rate).
func TestAgentsMoreThanAsked(t *testing.T) {
	z := serveZone(t)
	z.Set("cp-sender", "10.0.0.1", "10.0.0.2", "10.0.0.3")
	src, _ := Parse("dns:cp-sender", 9101)
	_, err := Agents(context.Background(), src, Options{Want: 2, Timeout: 100 * time.Millisecond, Interval: 20 * time.Millisecond, Resolver: z.Resolver()})
	var short *ShortError
	if !errors.As(err, &short) || short.Found != 3 || !contains(err.Error(), "more than asked") {
		t.Fatalf("err %v, want a ShortError saying 3 is more than asked", err)
	}
}

// TestAgentsFromSRV: the SRV records of a named port give each pod's
// hostname and port; the hostnames resolve to the addresses.
func TestAgentsFromSRV(t *testing.T) {
	z := serveZone(t)
	target := func(n string) dnsmessage.Name { return dnsmessage.MustNewName(n) }
	z.SetSRV("_control._tcp.cp-sender.cp.svc.cluster.local",
		dnsmessage.SRVResource{Target: target("cp-sender-1.cp-sender.cp.svc.cluster.local."), Port: 9101, Weight: 50},
		dnsmessage.SRVResource{Target: target("cp-sender-0.cp-sender.cp.svc.cluster.local."), Port: 9101, Weight: 50})
	z.Set("cp-sender-0.cp-sender.cp.svc.cluster.local", "10.0.0.20")
	z.Set("cp-sender-1.cp-sender.cp.svc.cluster.local", "10.0.0.21")
	src, err := Parse("srv:_control._tcp.cp-sender.cp.svc.cluster.local", 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Agents(context.Background(), src, Options{Want: 2, Timeout: 2 * time.Second, Resolver: z.Resolver()})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.0.0.20:9101", "10.0.0.21:9101"}; !slices.Equal(got, want) {
		t.Errorf("agents %v, want %v", got, want)
	}
}

// TestAgentsStopOnCancel: a cancelled sweep does not wait out the bound.
func TestAgentsStopOnCancel(t *testing.T) {
	z := serveZone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	src, _ := Parse("dns:cp-sender", 9101)
	start := time.Now()
	_, err := Agents(ctx, src, Options{Want: 1, Timeout: time.Minute, Interval: 20 * time.Millisecond, Resolver: z.Resolver()})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("err %v after %v, want the context's error at once", err, time.Since(start))
	}
}

func serveZone(t *testing.T) *dnszone.Zone {
	t.Helper()
	z, err := dnszone.Serve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
	return z
}
