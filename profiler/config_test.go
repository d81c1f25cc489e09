package profiler

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHandlersByChannelName(t *testing.T) {
	dir := t.TempDir()
	yml := `
default: {handler: spc}
channels:
  receive: {handler: buffered, path: ` + filepath.Join(dir, "r.log") + `, block_size: 8}
  emit: {handler: null}
counters: ` + filepath.Join(dir, "counters-{pid}.json") + `
`
	h, err := ParseHandlers([]byte(yml), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := New(time.Hour)
	p.CountersPath = h.Counters
	r, err := p.OpenNamed("receive", h)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := p.OpenNamed("emit", h)
	other, _ := p.OpenNamed("consume", h)
	for i := uint64(0); i < 20; i++ {
		r.LogTS(i)
		e.LogTS(i)
		other.LogTS(i)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(readAll(t, filepath.Join(dir, "r.log"))); got != 20 {
		t.Fatalf("receive logged %d records, want 20", got)
	}
	if c := p.Counts("consume"); len(c) != 1 || c[0] != 20 {
		t.Fatalf("consume (default spc) counted %v", c)
	}
	var cl CounterLog
	b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("counters-%d.json", os.Getpid())))
	if err != nil || json.Unmarshal(b, &cl) != nil || len(cl.Channels["consume"]) != 1 || cl.Channels["consume"][0] != 20 || cl.PeriodNs != int64(time.Hour) {
		t.Fatalf("counter log: %v %s", err, b)
	}
	if !e.Null() {
		t.Fatal("emit should be null")
	}
	var none *Handlers
	if none.For("x").Handler != HandlerNull {
		t.Fatal("no configuration must mean null")
	}
	for _, bad := range []string{"channels: {a: {handlr: spc}}", "defaults: {}", "channels: [1, 2]"} {
		if _, err := ParseHandlers([]byte(bad), "bad.yaml"); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := LoadHandlers(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file accepted")
	}
}

// TestShippedHandlersFile: profiles/default.yaml, the file the README's
// sweep uses, is valid for an agent (relative paths) and logs every
// standard point in full.
func TestShippedHandlersFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "profiles", "default.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHandlers(b, "profiles/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.CheckLocal(); err != nil {
		t.Fatal(err)
	}
	if h.Default.Handler != HandlerBuffered || h.Default.Path != "{name}.log" {
		t.Fatalf("default %+v: want every tuple in a buffered log per channel", h.Default)
	}
}
