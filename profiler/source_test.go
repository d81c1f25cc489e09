package profiler

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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
	srv := httptest.NewServer(&ConfigServer{File: file, Token: "s3cret"})
	defer srv.Close()
	url := srv.URL + PathHandlers
	if _, _, err := FetchHandlers(context.Background(), url, "wrong"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a wrong token was accepted: %v", err)
	}
	p, h, err := FromSource(context.Background(), url, "s3cret")
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
		p.Follow(ctx, url, "s3cret", 5*time.Millisecond, func(changed []string, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				reports = append(reports, "error: "+err.Error())
			} else {
				reports = append(reports, "switched "+strings.Join(changed, ","))
			}
		})
	}()
	if code := put(t, url, "s3cret", "channels: {recv: {handlr: buffered}}"); code != http.StatusBadRequest {
		t.Fatalf("a misspelt configuration was stored (%d)", code)
	}
	logPath := filepath.Join(dir, "{name}.log")
	if code := put(t, url, "s3cret", "channels:\n  recv: {handler: buffered, path: '"+logPath+"', block_size: 100}\n"); code != http.StatusNoContent {
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
	if ch.Config().Handler != HandlerBuffered {
		t.Fatalf("an invalid configuration changed the handler to %+v", ch.Config())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, filepath.Join(dir, "recv.log"))
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
