package agent

import (
	"archive/tar"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/cloudprofiler-go/cp/internal/cli"
	"github.com/cloudprofiler-go/cp/profiler"
)

// profiling is one trial's profiler: its logs go to a directory of the
// agent's, whatever paths the controller's configuration named (only their
// base names are kept), so a controller cannot make an agent write
// elsewhere.
type profiling struct {
	dir string
	p   *profiler.Profiler
	h   *profiler.Handlers
}

func (a *Agent) newProfiling(trial int, yaml string) (*profiling, error) {
	if yaml == "" {
		return nil, nil
	}
	h, err := profiler.ParseHandlers([]byte(yaml), "the trial's profile")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("cp-agent-%d-trial-%d-", os.Getpid(), trial))
	if err != nil {
		return nil, fmt.Errorf("profile directory: %w", err)
	}
	local := func(c profiler.Config) profiler.Config {
		if c.Path != "" {
			c.Path = filepath.Join(dir, filepath.Base(c.Path))
		}
		if c.AckPath != "" {
			c.AckPath = filepath.Join(dir, filepath.Base(c.AckPath))
		}
		return c
	}
	h.Default = local(h.Default)
	for name, c := range h.Channels {
		h.Channels[name] = local(c)
	}
	p := profiler.New(time.Second)
	p.CountersPath = filepath.Join(dir, "counters.json")
	return &profiling{dir: dir, p: p, h: h}, nil
}

func (p *profiling) profiler() *profiler.Profiler {
	if p == nil {
		return nil
	}
	return p.p
}

func (p *profiling) handlers() *profiler.Handlers {
	if p == nil {
		return nil
	}
	return p.h
}

func (p *profiling) close() error {
	if p == nil {
		return nil
	}
	return p.p.Close()
}

// handleProfile streams the last profiled trial's files as a tar.
func (a *Agent) handleProfile(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	dir := a.profileDir
	a.mu.Unlock()
	if dir == "" {
		cli.ReplyError(w, http.StatusNotFound, fmt.Errorf("no profiled trial has finished on this agent"))
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		cli.ReplyError(w, http.StatusInternalServerError, err)
		return
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	w.Header().Set("Content-Type", "application/x-tar")
	tw := tar.NewWriter(w)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		st, err := f.Stat()
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: e.Name(), Mode: 0o644, Size: st.Size(), ModTime: st.ModTime(), Typeflag: tar.TypeReg})
		}
		if err == nil {
			_, err = io.CopyN(tw, f, st.Size())
		}
		f.Close()
		if err != nil {
			return // the client sees a truncated archive
		}
	}
	_ = tw.Close()
}
