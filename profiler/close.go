package profiler

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Close flushes and closes every channel (no record is lost); LogTS must not
// be called afterwards. A nil profiler closes as a no-op.
func (p *Profiler) Close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	p.sampler.stop()
	var errs []error
	for _, c := range p.channels {
		s := c.load()
		if s.next != nil { // a switch no writer picked up
			p.retire(c.name, s.prev)
			s = s.next
		}
		if s.kind == kindOther {
			if err := s.h.close(); err != nil {
				errs = append(errs, fmt.Errorf("close channel %q: %w", c.name, err))
			}
		}
	}
	p.retiring.Wait()
	if p.CountersPath != "" {
		if err := p.writeCounterLog(strings.ReplaceAll(p.CountersPath, "{pid}", strconv.Itoa(os.Getpid())), p.sampler.log()); err != nil {
			errs = append(errs, err)
		}
	}
	p.errMu.Lock()
	errs = append(errs, p.errs...)
	p.errMu.Unlock()
	if p.root != nil {
		if err := p.root.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p *Profiler) writeCounterLog(path string, l CounterLog) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	f, err := p.openLog(path)
	if err != nil {
		return fmt.Errorf("write counters: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write counters %s: %w (the counters' series of %d channel(s) is lost)", path, err, len(l.Channels))
	}
	return nil
}
