package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

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
