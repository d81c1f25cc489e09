package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/profiler"
)

var cfgReady = regexp.MustCompile(`ready: (http://\S+)`)

// TestLiveProfileSwitch runs dgrecv and dgsend following a configuration
// server that says Null; mid-run a PUT switches "consumed" and "emit.0" to
// buffered logs. Both processes switch without restarting, their metrics
// show the new handler, and the logs hold the tuples seen after the switch:
// a contiguous tail of the stream, each tuple once.
func TestLiveProfileSwitch(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "handlers.yaml")
	if err := os.WriteFile(cfgFile, []byte("default: {handler: null}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := Start(filepath.Join(binDir, "cpsweep"), "profiler", "serve", "--file", cfgFile, "--listen", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Cmd.Process.Kill()
	if !srv.WaitForLine("ready", 10*time.Second) {
		t.Fatalf("configuration server did not start:\n%s", srv.Stderr.String())
	}
	url := cfgReady.FindStringSubmatch(srv.Stderr.String())[1]
	port, err := FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	follow := []string{"--profile", url, "--profile-follow", "100ms", "--calibrate", "30ms"}
	recvDir, sendDir := filepath.Join(dir, "recv"), filepath.Join(dir, "send")
	recv, err := Start(filepath.Join(binDir, "dgrecv"), append([]string{"--bind", fmt.Sprintf("tcp://127.0.0.1:%d", port), "--json",
		"--metrics-addr", "127.0.0.1:0", "--expect-streams", "1", "--profile-dir", recvDir}, follow...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Cmd.Process.Kill()
	metrics, err := recv.MetricsAddr(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	send, err := Start(filepath.Join(binDir, "dgsend"), append([]string{"--connect", fmt.Sprintf("tcp://127.0.0.1:%d", port), "--json",
		"--metrics-addr", "", "--rate", "200k", "--duration", "4s", "--bucket", "10", "--profile-dir", sendDir}, follow...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer send.Cmd.Process.Kill()
	// Switched while data flows.
	waitMetric(t, metrics, "cp_receiver_consumed_tuples_total", 10*time.Second, positive)
	// Paths are relative to each process's --profile-dir.
	yaml := "default: {handler: null}\nchannels:\n  consumed: {handler: buffered, path: consumed.log, block_size: 4096}\n  emit.0: {handler: buffered, path: emit.log, block_size: 4096}\n"
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(yaml))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT configuration: %v %v", err, resp)
	}
	resp.Body.Close()
	if !recv.WaitForLine("switched consumed", 5*time.Second) || !send.WaitForLine("switched emit.0", 5*time.Second) {
		t.Fatalf("no live switch:\ndgrecv: %s\ndgsend: %s", recv.Stderr.String(), send.Stderr.String())
	}
	mresp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !strings.Contains(string(body), `cp_profiler_channel{channel="consumed",handler="buffered"} 1`) ||
		!strings.Contains(string(body), `cp_profiler_channel{channel="receive.0",handler="null"} 1`) {
		t.Fatalf("metrics do not show the switch:\n%s", grepLines(string(body), "cp_profiler"))
	}
	if err := send.Wait(30 * time.Second); err != nil {
		t.Fatalf("dgsend: %v\n%s", err, send.Stderr.String())
	}
	if err := recv.Wait(30 * time.Second); err != nil {
		t.Fatalf("dgrecv: %v\n%s", err, recv.Stderr.String())
	}
	for _, name := range []string{filepath.Join(recvDir, "consumed.log"), filepath.Join(sendDir, "emit.log")} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		var ids []uint64
		bad, err := profiler.ReadBlocks(f, func(recs []profiler.Record) error {
			for _, r := range recs {
				ids = append(ids, r.ID)
			}
			return nil
		})
		f.Close()
		if err != nil || len(bad) > 0 || len(ids) < 1000 {
			t.Fatalf("%s: %d records, %v %v", name, len(ids), bad, err)
		}
		for i := 1; i < len(ids); i++ {
			if ids[i] != ids[i-1]+1 {
				t.Fatalf("%s: id %x after %x: the tail after the switch is not contiguous", name, ids[i], ids[i-1])
			}
		}
		t.Logf("%s: %d tuples logged after the live switch", name, len(ids))
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
