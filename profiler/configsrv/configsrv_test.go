package configsrv

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/profiler"
)

func put(t *testing.T, url, token, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestFollowConfigServer: processes open their channels from a
// configuration server and follow it; a PUT switches a channel from Null to
// buffered while its writer runs, a broken configuration changes nothing.
func TestFollowConfigServer(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "handlers.yaml")
	if err := os.WriteFile(file, []byte("default: {handler: null}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.Serve(httpapi.ServerConfig{Addr: "127.0.0.1:0", Token: "s3cret-s3cret-s3cret", Routes: (&ConfigServer{File: file}).Routes()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := srv.URL() + PathHandlers
	if _, _, err := Fetch(context.Background(), url, "wrong"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a wrong token was accepted: %v", err)
	}
	p, h, err := FromSource(context.Background(), url, "s3cret-s3cret-s3cret", dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := p.OpenNamed("recv", h)
	if err != nil || !ch.Null() {
		t.Fatalf("open from server: %v null=%v", err, ch.Null())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var reports []string
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		Follow(ctx, p, url, "s3cret-s3cret-s3cret", 5*time.Millisecond, func(changed []string, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				reports = append(reports, "error: "+err.Error())
			} else {
				reports = append(reports, "switched "+strings.Join(changed, ","))
			}
		})
	}()
	if code := put(t, url, "s3cret-s3cret-s3cret", "channels: {recv: {handlr: buffered}}"); code != http.StatusBadRequest {
		t.Fatalf("a misspelt configuration was stored (%d)", code)
	}
	if code := put(t, url, "s3cret-s3cret-s3cret", "channels:\n  recv: {handler: buffered, path: '{name}.log', block_size: 100}\n"); code != http.StatusNoContent {
		t.Fatalf("put: %d", code)
	}
	// The writer logs until the switch has happened, and 500 ids after.
	var id uint64
	for deadline := time.Now().Add(5 * time.Second); ch.Null() && time.Now().Before(deadline); id++ {
		ch.LogTS(id)
	}
	if ch.Null() {
		t.Fatal("the channel was not switched within 5 s")
	}
	first := id
	for i := 0; i < 500; i++ {
		ch.LogTS(id)
		id++
	}
	// A file edited into something invalid is refused and changes nothing.
	if err := os.WriteFile(file, []byte("channels: [oops]"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	<-followed
	if ch.Config().Handler != profiler.HandlerBuffered {
		t.Fatalf("an invalid configuration changed the handler to %+v", ch.Config())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readLog(t, filepath.Join(dir, "recv.log"))
	// The id logged while the switch happened may land on either side.
	if n := len(recs); n < 500 || n > 501 || recs[n-1].ID != id-1 || recs[0].ID+uint64(n)-1 != id-1 || recs[0].ID+1 < first {
		t.Fatalf("after the switch: %d records, ids %d..%d, want the 500 from %d to %d", n, recs[0].ID, recs[n-1].ID, first, id-1)
	}
	mu.Lock()
	defer mu.Unlock()
	joined := strings.Join(reports, "\n")
	if !strings.Contains(joined, "switched recv") || !strings.Contains(joined, "error:") {
		t.Fatalf("follow reported:\n%s", joined)
	}
}

// TestConfigServerRefuses: the server validates a configuration before it
// accepts it (names, parameters, paths that followers could not write) and
// answers 413 above its size limit instead of truncating.
func TestConfigServerRefuses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "handlers.yaml")
	good := "default: {handler: null}\n"
	if err := os.WriteFile(file, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.Serve(httpapi.ServerConfig{Addr: "127.0.0.1:0", Routes: (&ConfigServer{File: file}).Routes()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := srv.URL() + PathHandlers
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"unknown handler", "default: {handler: nosuch}", http.StatusBadRequest},
		{"downsample every 0", "channels: {a: {handler: downsample, path: a.log, every: 0}}", http.StatusBadRequest},
		{"xoy x > y", "channels: {a: {handler: xoy, path: a.log, x: 3, y: 2}}", http.StatusBadRequest},
		{"recording without path", "default: {handler: buffered}", http.StatusBadRequest},
		{"absolute path", "default: {handler: buffered, path: /etc/passwd}", http.StatusBadRequest},
		{"climbing path", "default: {handler: buffered, path: ../../x.log}", http.StatusBadRequest},
		{"absolute counters", "counters: /tmp/c.json", http.StatusBadRequest},
		{"bad codec", "default: {handler: buffered, path: a.log, codec: lz4}", http.StatusBadRequest},
		{"NUL in a path", "default: {handler: buffered, path: \"a\\0b.log\"}", http.StatusBadRequest},
		{"newline in a path", "default: {handler: buffered, path: \"a\\nb.log\"}", http.StatusBadRequest},
		{"escape in an ack path", "default: {handler: ret-start, path: a.log, ack_path: \"\\e]0;x.log\", x: 1, y: 1, listen: '127.0.0.1:1', peer: '127.0.0.1:2'}", http.StatusBadRequest},
		{"newline in counters", "counters: \"c\\n.json\"", http.StatusBadRequest},
		{"newline in a channel name", "channels: {\"a\\nb\": {handler: null}}", http.StatusBadRequest},
		{"too large", "# " + strings.Repeat("x", profiler.MaxHandlersBytes) + "\n" + good, http.StatusRequestEntityTooLarge},
		{"valid", "default: {handler: buffered, path: '{name}.log'}", http.StatusNoContent},
	} {
		if code := put(t, url, "", tc.body); code != tc.want {
			t.Errorf("%s: PUT answered %d, want %d", tc.name, code, tc.want)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil || string(b) != "default: {handler: buffered, path: '{name}.log'}" {
		t.Fatalf("the stored configuration is %q (%v): only the valid one may be stored", b, err)
	}
}

// TestFetchRefusesAConfigurationAboveTheLimit: a configuration larger than
// 1 MiB is refused whole by a follower, never cut at the limit and
// applied (a cut one could still parse, as something else).
func TestFetchRefusesAConfigurationAboveTheLimit(t *testing.T) {
	big := "default: {handler: null}\n" + strings.Repeat("# padding\n", profiler.MaxHandlersBytes/10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, big) }))
	defer srv.Close()
	_, _, err := Fetch(context.Background(), srv.URL+PathHandlers, "")
	if err == nil || !strings.Contains(err.Error(), "never applied in part") {
		t.Fatalf("a %d-byte configuration: %v", len(big), err)
	}
	exact := big[:profiler.MaxHandlersBytes]
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, exact) }))
	defer srv2.Close()
	if _, _, err := Fetch(context.Background(), srv2.URL+PathHandlers, ""); err != nil {
		t.Fatalf("a configuration of exactly the limit: %v", err)
	}
}

// readLog reads every record of a binary log.
func readLog(t *testing.T, path string) []profiler.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []profiler.Record
	if _, err := profiler.ReadBlocks(f, func(r []profiler.Record) error { recs = append(recs, r...); return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}
