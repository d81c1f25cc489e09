package rundir

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cloudprofiler-go/cp/internal/readfile"
	"github.com/cloudprofiler-go/cp/internal/termsafe"
	"github.com/cloudprofiler-go/cp/profiler"
)

// Bounds of what readProfiles takes from profiles/: a real run has a
// directory per agent and a few logs per channel. The analyses open every
// log at once (their streams are merged by time), about 1 MiB each at most
// (the read buffer is sized to the file below that), so MaxLogs bounds
// their memory; MaxLogBytes bounds the time.
const (
	MaxNodes    = 256
	MaxLogs     = 128
	MaxLogBytes = 64 << 30
	// maxEntries bounds the names listed in one directory, logs or not.
	maxEntries = 4096
)

// readProfiles lists profiles/<node>/ without opening a log: a name with a
// control character is skipped (it would drive a terminal), a file reached
// by a second name (a hard or symbolic link) is read once, and what is not
// a regular file is never opened. Past a bound the node directories are
// dropped, with a problem.
func (d *Dir) readProfiles() {
	root := filepath.Join(d.Path, ProfilesDir)
	nodes, err := listDir(root)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			d.problem("%v", err)
		}
		return // no profiled trial
	}
	if len(nodes) > MaxNodes {
		d.problem("profiles: %d node directories or more, above the %d a run directory may hold: the logs are not read", len(nodes), MaxNodes)
		return
	}
	seen := map[readfile.ID]string{}
	var logs int
	var bytes int64
	for _, n := range nodes {
		if !n.IsDir() {
			continue
		}
		if !termsafe.Safe(n.Name()) {
			d.problem("profiles/%s: a node name with control characters; skipped", termsafe.Escape(n.Name()))
			continue
		}
		nf := &NodeFiles{Logs: map[string][]string{}}
		files, err := listDir(filepath.Join(root, n.Name()))
		if err != nil {
			d.problem("%v", err)
			continue
		}
		for _, f := range files {
			name, path := f.Name(), filepath.Join(root, n.Name(), f.Name())
			if !termsafe.Safe(name) {
				d.problem("profiles/%s/%s: a file name with control characters; skipped", n.Name(), termsafe.Escape(name))
				continue
			}
			if f.Type()&os.ModeSymlink != 0 {
				d.problem("profiles/%s/%s is a symbolic link: not read (a run directory's files are its own)", n.Name(), name)
				continue
			}
			ch, isLog := logChannel(name)
			if name == "counters.json" {
				var cl profiler.CounterLog
				if err := readJSON(path, MaxJSONFile, &cl); err != nil {
					d.problem("%v", err)
				} else {
					nf.Counters = &cl
				}
			}
			if !isLog {
				continue
			}
			id, size, err := readfile.Identify(path)
			if err != nil {
				d.problem("%v", err)
				continue
			}
			if first, ok := seen[id]; ok {
				d.problem("%s is the same file as %s (a link): read once", path, first)
				continue
			}
			seen[id] = path
			logs, bytes = logs+1, bytes+size
			if logs > MaxLogs || bytes > MaxLogBytes {
				d.problem("profiles: more than %d logs or %d GiB of them, above what a run directory may hold: the logs are not read", MaxLogs, MaxLogBytes>>30)
				d.Nodes = map[string]*NodeFiles{}
				return
			}
			nf.Logs[ch] = append(nf.Logs[ch], path)
		}
		for ch := range nf.Logs {
			sort.Slice(nf.Logs[ch], func(i, j int) bool { return segmentOrder(nf.Logs[ch][i]) < segmentOrder(nf.Logs[ch][j]) })
		}
		d.Nodes[n.Name()] = nf
	}
}

// logChannel is the channel a file of a node's directory logs: CHANNEL.log
// and its segments CHANNEL.log.N, and return-trip acks ("CHANNEL.ack").
func logChannel(name string) (string, bool) {
	switch {
	case strings.HasSuffix(name, ".ack"):
		return strings.TrimSuffix(strings.TrimSuffix(name, ".ack"), ".log") + ".ack", true
	case strings.Contains(name, ".log"):
		ch, seg, _ := strings.Cut(name, ".log")
		if seg != "" && !isSegment(seg) {
			return "", false
		}
		return ch, true
	}
	return "", false
}

// listDir lists at most maxEntries names of dir, sorted; more is an error
// (100,000 empty logs are not a run directory).
func listDir(dir string) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(maxEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	if len(entries) > maxEntries {
		return nil, fmt.Errorf("%s holds more than %d entries, above what a run directory may hold: not read", dir, maxEntries)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, nil
}

func isSegment(s string) bool {
	if len(s) < 2 || s[0] != '.' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// segmentOrder sorts CHANNEL.log before CHANNEL.log.1, .2, ..., .10.
func segmentOrder(path string) int {
	_, seg, _ := strings.Cut(filepath.Base(path), ".log")
	n := 0
	if isSegment(seg) {
		fmt.Sscan(seg[1:], &n)
	}
	return n
}
