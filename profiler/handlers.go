package profiler

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/cloudprofiler-go/cp/tsc"
)

// sink writes blocks of records to a file in the channel's format. Blocks
// are encoded by workers (compression off the calling thread) and written
// in order by one writer.
type sink struct {
	f       *os.File
	path    string
	format  string
	codec   int
	jobs    chan job
	done    chan struct{}
	free    chan []run
	mu      sync.Mutex
	pending map[uint64]encoded
	next    uint64
	err     error
	wg      sync.WaitGroup
	// records handed to the sink, and those of them not written because
	// a write failed (the block that failed and every one after it)
	records, lost uint64
}

// encoded is a block ready to be written.
type encoded struct {
	b []byte
	n int // records
}

// opener creates a log file: the profiler's, confined to its directory
// when it has one.
type opener func(path string) (*os.File, error)

// createFile is the opener of a profiler without a directory.
func createFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
}

type job struct {
	seq     uint64
	runs    []run
	records int
}

func newSink(open opener, cfg Config) (*sink, error) {
	f, err := open(cfg.Path)
	if err != nil {
		return nil, err
	}
	codec := CodecZstd
	switch cfg.Codec {
	case "", "zstd":
	case "none":
		codec = CodecNone
	default:
		f.Close()
		return nil, fmt.Errorf("codec must be zstd or none, got %q", cfg.Codec)
	}
	workers := max(cfg.Workers, 1)
	s := &sink{f: f, path: cfg.Path, format: cfg.Format, codec: codec, jobs: make(chan job, workers*2), done: make(chan struct{}),
		free: make(chan []run, workers*2+2), pending: map[uint64]encoded{}}
	for i := 0; i < workers; i++ {
		enc, err := newBlockEncoder(codec)
		if err != nil {
			f.Close()
			return nil, err
		}
		s.wg.Add(1)
		go s.work(enc)
	}
	return s, nil
}

// work encodes blocks and hands them to the writer in sequence order, on a
// thread of its own at a lower priority (background): a block's
// compression takes tens of ms of CPU, and at the stages' priority it took
// them from whichever stage thread shared the CPU, in slices of ms. Should
// the priority not be lowered, the worker runs as before: no record
// depends on it.
func (s *sink) work(enc *blockEncoder) {
	defer s.wg.Done()
	restore, _ := background()
	defer restore()
	for j := range s.jobs {
		var out []byte
		if s.format == FormatASCII {
			for _, r := range j.runs {
				for i := uint64(0); i < r.N; i++ {
					out = strconv.AppendUint(out, r.TSC, 10)
					out = append(out, ',')
					out = strconv.AppendUint(out, r.ID+i, 10)
					out = append(out, '\n')
				}
			}
		} else {
			out = enc.encode(nil, j.runs, j.records)
		}
		n := j.records
		s.recycle(j.runs)
		s.mu.Lock()
		s.pending[j.seq] = encoded{out, n}
		for {
			e, ok := s.pending[s.next]
			if !ok {
				break
			}
			delete(s.pending, s.next)
			s.next++
			s.records += uint64(e.n)
			if s.err == nil {
				_, s.err = s.f.Write(e.b)
			}
			if s.err != nil { // a torn block cannot be read: count it whole
				s.lost += uint64(e.n)
			}
		}
		s.mu.Unlock()
	}
}

func (s *sink) recycle(runs []run) {
	select {
	case s.free <- runs[:0]:
	default:
	}
}

// block returns an empty block of capacity n (recycled when possible).
func (s *sink) block(n int) []run {
	select {
	case b := <-s.free:
		if cap(b) >= n {
			return b[:n]
		}
	default:
	}
	return make([]run, n)
}

// close waits for every block to be written and closes the file. An
// error names the file and how many of its records were lost.
func (s *sink) close() error {
	close(s.jobs)
	s.wg.Wait()
	if s.err != nil {
		s.f.Close()
		return &WriteError{Path: s.path, Err: s.err, Lost: s.lost, Records: s.records}
	}
	err := s.f.Sync()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil { // the kernel could not keep what it accepted: any record may be gone
		return &WriteError{Path: s.path, Err: err, Lost: s.records, Records: s.records, UpTo: true}
	}
	return nil
}

// WriteError is a log that could not be written completely.
type WriteError struct {
	Path          string
	Err           error
	Lost, Records uint64
	UpTo          bool // Lost is an upper bound (a failed sync or close)
}

func (e *WriteError) Error() string {
	bound := ""
	if e.UpTo {
		bound = "up to "
	}
	return fmt.Sprintf("write %s: %v: %s%d of %d records lost", e.Path, e.Err, bound, e.Lost, e.Records)
}

func (e *WriteError) Unwrap() error { return e.Err }

// buffered is the buffered identity handler: (TSC, id) pairs go into a
// fixed block on the calling thread; a full block goes to the sink. A
// pair at the same TSC as the previous one with the next id extends its
// run, and a range is one run: logging a bucket at one instant costs one
// entry, however many tuples it holds.
type buffered struct {
	s       *sink
	block   []run
	n       int // entries in block
	records int // records in block (at most size)
	size    int // records per block
	seq     uint64
}

func newBuffered(open opener, cfg Config) (*buffered, error) {
	s, err := newSink(open, cfg)
	if err != nil {
		return nil, err
	}
	size := cfg.BlockSize
	if size <= 0 {
		size = 1 << 20
	}
	// The block the first hand-off fills next is made here too, off the
	// logging thread: made there, it was up to 24 MB (1 M runs) for the
	// runtime to find and zero on the stage's own thread in every trial
	// (the previous trial's freed blocks are reused memory, zeroed on
	// allocation), in the middle of the trial's schedule. Later hand-offs
	// take the blocks the workers recycle.
	b := &buffered{s: s, block: s.block(size), size: size}
	s.recycle(make([]run, size))
	return b, nil
}

func (b *buffered) log(id uint64)             { b.put(Record{TSC: tsc.ReadFast(), ID: id}) }
func (b *buffered) logAt(t uint64, id uint64) { b.put(Record{TSC: t, ID: id}) }

func (b *buffered) put(r Record) {
	if p := b.last(); p != nil && p.TSC == r.TSC && p.ID+p.N == r.ID {
		p.N++
	} else {
		b.block[b.n] = run{TSC: r.TSC, ID: r.ID, N: 1}
		b.n++
	}
	if b.records++; b.records == b.size {
		b.handoff()
	}
}

// last is the block's latest run (nil in an empty block).
func (b *buffered) last() *run {
	if b.n == 0 {
		return nil
	}
	return &b.block[b.n-1]
}

// logRangeAt logs ids first..first+n-1 at t as one run (split only where
// a block fills).
func (b *buffered) logRangeAt(t, first, n uint64) {
	for n > 0 {
		k := min(n, uint64(b.size-b.records))
		b.block[b.n] = run{TSC: t, ID: first, N: k}
		b.n++
		b.records += int(k)
		first, n = first+k, n-k
		if b.records == b.size {
			b.handoff()
		}
	}
}

func (b *buffered) handoff() {
	b.s.jobs <- job{seq: b.seq, runs: b.block[:b.n], records: b.records}
	b.seq++
	b.block, b.n, b.records = b.s.block(b.size), 0, 0
}

func (b *buffered) close() error {
	if b.n > 0 {
		b.handoff()
	}
	return b.s.close()
}

// identity writes every pair as it comes: a one-record block (binary) or a
// line (ASCII), through a small buffer like stdio's (its own, so that a
// failed write knows exactly which records it lost).
type identity struct {
	mu   sync.Mutex
	f    *os.File
	path string
	enc  *blockEncoder
	fmt  string
	one  [1]run
	buf  []byte // encoded records not written yet
	n    int    // records in buf
	// records logged, and those lost to a failed write (the buffer then,
	// and everything after it)
	records, lost uint64
	err           error
}

const identityBuffer = 4096

func newIdentity(open opener, cfg Config) (*identity, error) {
	f, err := open(cfg.Path)
	if err != nil {
		return nil, err
	}
	enc, _ := newBlockEncoder(CodecNone)
	return &identity{f: f, path: cfg.Path, enc: enc, fmt: cfg.Format, buf: make([]byte, 0, identityBuffer+64)}, nil
}

func (h *identity) log(id uint64) { h.logAt(tsc.ReadFast(), id) }

func (h *identity) logAt(t, id uint64) {
	h.mu.Lock()
	h.records++
	if h.err != nil {
		h.lost++
		h.mu.Unlock()
		return
	}
	if h.fmt == FormatASCII {
		h.buf = strconv.AppendUint(h.buf, t, 10)
		h.buf = append(h.buf, ',')
		h.buf = strconv.AppendUint(h.buf, id, 10)
		h.buf = append(h.buf, '\n')
	} else {
		h.one[0] = run{TSC: t, ID: id, N: 1}
		h.buf = h.enc.encode(h.buf, h.one[:], 1)
	}
	if h.n++; len(h.buf) >= identityBuffer {
		h.flush()
	}
	h.mu.Unlock()
}

// flush writes the buffer (h.mu held).
func (h *identity) flush() {
	if len(h.buf) == 0 || h.err != nil {
		return
	}
	if _, err := h.f.Write(h.buf); err != nil {
		h.err, h.lost = err, h.lost+uint64(h.n)
	}
	h.buf, h.n = h.buf[:0], 0
}

func (h *identity) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flush()
	err := h.err
	if e := h.f.Close(); err == nil && e != nil {
		err = e
		h.lost = h.records // what the kernel had accepted may be gone too
	}
	if err != nil {
		return &WriteError{Path: h.path, Err: err, Lost: h.lost, Records: h.records, UpTo: h.err == nil}
	}
	return nil
}

// downsample logs every n-th call.
type downsample struct {
	every, n uint64
	out      *buffered
}

func (d *downsample) log(id uint64) {
	if d.n++; d.n == d.every {
		d.n = 0
		d.out.log(id)
	}
}

func (d *downsample) logAt(t, id uint64) {
	if d.n++; d.n == d.every {
		d.n = 0
		d.out.logAt(t, id)
	}
}

// logRangeAt counts a range as n calls and logs the ones that fall on
// every n-th, without a step per id.
func (d *downsample) logRangeAt(t, first, n uint64) {
	for n > 0 {
		step := d.every - d.n // the step-th id from here is kept
		if step > n {
			d.n += n
			return
		}
		d.out.logAt(t, first+step-1)
		d.n = 0
		first, n = first+step, n-step
	}
}

func (d *downsample) close() error { return d.out.close() }

// xoy logs a tuple iff id mod y < x: the same ids on every node, so
// sampled tuples can be joined across nodes.
type xoy struct {
	x, y uint64
	out  *buffered
}

func (h *xoy) log(id uint64) {
	if id%h.y < h.x {
		h.out.log(id)
	}
}

func (h *xoy) logAt(t, id uint64) {
	if id%h.y < h.x {
		h.out.logAt(t, id)
	}
}

// logRangeAt keeps the ids of first..first+n-1 with id mod y < x as runs,
// one per block of y ids, without a division per id: a bucket of 100 at
// every point cost the logging threads 7% of a run's CPU per id, against
// 0.4% for logging every tuple with the buffered handler's runs.
func (h *xoy) logRangeAt(t, first, n uint64) {
	if n == 0 {
		return
	}
	if h.x >= h.y {
		h.out.logRangeAt(t, first, n)
		return
	}
	end := first + n
	if end < first { // ids wrap at 2^64: log in two ranges
		h.logRangeAt(t, first, -first)
		h.logRangeAt(t, 0, end)
		return
	}
	for b := first - first%h.y; b < end; b += h.y {
		lo, hi := max(b, first), min(b+h.x, end)
		if lo < hi {
			h.out.logRangeAt(t, lo, hi-lo)
		}
		if b+h.y < b { // the last block below 2^64
			break
		}
	}
}

func (h *xoy) close() error { return h.out.close() }

// firstLast keeps the first and the latest pair and writes both on close.
type firstLast struct {
	open        opener
	cfg         Config
	first, last Record
	seen        bool
}

func newFirstLast(open opener, cfg Config) (*firstLast, error) {
	return &firstLast{open: open, cfg: cfg}, nil
}

func (h *firstLast) log(id uint64) { h.logAt(tsc.ReadFast(), id) }

func (h *firstLast) logAt(t, id uint64) {
	r := Record{TSC: t, ID: id}
	if !h.seen {
		h.first, h.seen = r, true
	}
	h.last = r
}

func (h *firstLast) close() error {
	cfg := h.cfg
	cfg.BlockSize = 2
	b, err := newBuffered(h.open, cfg)
	if err != nil {
		return err
	}
	if h.seen {
		b.put(h.first)
		b.put(h.last)
	}
	return b.close()
}
