package cli

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		err  bool
	}{
		{"500000", 5e5, false}, {"500k", 5e5, false}, {"2.5M", 2.5e6, false}, {"1e6", 1e6, false}, {"0", 0, false},
		{"", 0, true}, {"fast", 0, true}, {"-5", 0, true}, {"NaN", 0, true}, {"5T", 0, true},
	} {
		got, err := ParseRate(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseRate(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestServeMetrics(t *testing.T) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"})
	c.Add(3)
	addr, stop, err := ServeMetrics("127.0.0.1:0", c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "x_total 3") {
		t.Fatalf("metric missing:\n%s", body)
	}
	if _, _, err := ServeMetrics(addr, c, nil); err == nil {
		t.Fatal("second listener on the same address succeeded")
	}
}
