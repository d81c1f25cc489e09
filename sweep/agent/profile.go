package agent

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/profiler"
)

// profiling is one trial's profiler: its logs go to a directory of the
// agent's own, and the handler configuration's paths are relative to it;
// a path that would lead outside (absolute, "..", a symbolic link) is
// refused, so a controller cannot make an agent write elsewhere.
type profiling struct {
	dir string
	p   *profiler.Profiler
	h   *profiler.Handlers
}

// newProfiling makes the trial's directory inside the agent's temporary
// directory (created on first use, removed by Close).
func (a *Agent) newProfiling(trial int, h *profiler.Handlers, period time.Duration) (*profiling, error) {
	if h == nil {
		return nil, nil
	}
	// Validated with the trial (names, parameters, paths inside the
	// directory); the profiler's root refuses an escape at open as well.
	var err error
	a.mu.Lock()
	if a.workDir == "" {
		if a.workDir, err = os.MkdirTemp("", fmt.Sprintf("cp-agent-%d-", os.Getpid())); err != nil {
			a.mu.Unlock()
			return nil, fmt.Errorf("agent directory: %w", err)
		}
	}
	dir := filepath.Join(a.workDir, fmt.Sprintf("trial-%d", trial))
	a.mu.Unlock()
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("profile directory: %w", err)
	}
	p, err := profiler.NewFor(dir, h, "counters.json", period)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &profiling{dir: dir, p: p, h: h}, nil
}

// discard closes a trial's profiler that never ran and removes its files.
func (a *Agent) discard(p *profiling) {
	if p == nil {
		return
	}
	_ = p.p.Close()
	os.RemoveAll(p.dir)
}

// keepProfile makes dir the profile served next, removing the previous
// one (a.mu is held).
func (a *Agent) keepProfile(dir string) {
	if a.profileDir != "" && a.profileDir != dir {
		os.RemoveAll(a.profileDir)
	}
	a.profileDir = dir
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

// handleProfile streams the last profiled trial's files as a tar; once
// they are all sent, the agent removes them.
func (a *Agent) handleProfile(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	dir := a.profileDir
	a.mu.Unlock()
	if dir == "" {
		httpapi.ReplyError(w, http.StatusNotFound, fmt.Errorf("no profiled trial's logs are waiting on this agent (they are removed once fetched)"))
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		httpapi.ReplyError(w, http.StatusInternalServerError, errors.New("the profile directory cannot be read"))
		return
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	// The logs may be larger than the server's write timeout allows: give
	// this reply its own deadline, of the server's plus a second a MiB
	// (a slow link), instead of none.
	var size int64
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			size += info.Size()
		}
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(httpapi.DefaultWriteTimeout + time.Duration(size>>20)*time.Second))
	w.Header().Set("Content-Type", "application/x-tar")
	tw := tar.NewWriter(w)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := addFile(tw, dir, e.Name()); err != nil {
			a.opts.Logf("profile: %v (the client gets a truncated archive)", err)
			return
		}
	}
	if err := tw.Close(); err != nil {
		return
	}
	a.mu.Lock()
	if a.profileDir == dir {
		os.RemoveAll(dir)
		a.profileDir = ""
	}
	a.mu.Unlock()
}

func addFile(tw *tar.Writer, dir, name string) error {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: st.Size(), ModTime: st.ModTime(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.CopyN(tw, f, st.Size())
	return err
}
