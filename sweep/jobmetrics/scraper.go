package jobmetrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/internal/redact"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/servicerate"
)

// MaxBody bounds one scrape's body.
const MaxBody = 8 << 20

// Source is a job's metrics endpoint and how to read it.
type Source struct {
	URL     string // http://HOST:PORT/metrics
	Mapping Mapping
	// Token, when set, is sent as a bearer token.
	Token string
}

// Scrape reads the source once.
func (s Source) Scrape(ctx context.Context, client *http.Client) (map[string]*Operator, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	if s.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return nil, fmt.Errorf("HTTP %d %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, err
	}
	if len(body) > MaxBody {
		return nil, fmt.Errorf("the metrics are over %d bytes", MaxBody)
	}
	return s.Mapping.Parse(bytes.NewReader(body)) // no copy of up to 8 MiB a scrape
}

// Scraper scrapes a source every period from Start until Stop.
type Scraper struct {
	src     Source
	rec     *Recorder
	silent  time.Duration
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	err     error
	failed  int
	lastErr error
}

// Start begins scraping src every period; a source that answers nothing
// usable for silentFor is the scraper's error.
func Start(src Source, period, silentFor time.Duration) *Scraper {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Scraper{src: src, rec: NewRecorder(src.Mapping, period), silent: silentFor, cancel: cancel, done: make(chan struct{})}
	go w.run(ctx, period)
	return w
}

func (w *Scraper) run(ctx context.Context, period time.Duration) {
	defer close(w.done)
	client := httpapi.NewClient(max(period, time.Second))
	lastOK := time.Now()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		ops, err := w.src.Scrape(ctx, client)
		now := time.Now()
		if err == nil {
			err = w.rec.Add(ops, now.UnixNano())
			if err != nil { // the job restarted, or too much: nothing later is trusted
				w.fail(err)
				return
			}
			lastOK = now
		} else if ctx.Err() == nil {
			w.mu.Lock()
			w.failed++
			w.lastErr = err
			w.mu.Unlock()
			if now.Sub(lastOK) >= w.silent {
				w.fail(fmt.Errorf("no metrics for %v: %w", now.Sub(lastOK).Round(100*time.Millisecond), err))
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (w *Scraper) fail(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}

// Err is the watch's failure so far (nil: none).
func (w *Scraper) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the watch and returns the job's operators over it: an error
// when the job restarted, stopped answering, or named no operator.
func (w *Scraper) Stop() (*protocol.JobResult, error) {
	w.cancel()
	<-w.done
	if err := w.Err(); err != nil {
		return nil, fmt.Errorf("the job's metrics at %s: %w", redact.URL(w.src.URL), err)
	}
	if w.rec.Samples() < 2 {
		why := errors.New("fewer than two scrapes")
		if w.lastErr != nil {
			why = fmt.Errorf("%d scrapes failed, the last: %w", w.failed, w.lastErr)
		}
		return nil, fmt.Errorf("the job's metrics at %s: %w", redact.URL(w.src.URL), why)
	}
	res := w.rec.Result()
	if len(res.StageSeries.Stages) == 0 {
		return nil, fmt.Errorf("the job's metrics at %s name no operator by %s, %s and %s (labels %v): give a mapping file (--job-metrics-map)",
			redact.URL(w.src.URL), w.src.Mapping.Busy, w.src.Mapping.BackPressured, w.src.Mapping.Idle, w.src.Mapping.OperatorLabels)
	}
	res.ServiceRates = servicerate.BusyTimeOfSeries(res.StageSeries, 0, 0)
	if err := res.Validate(); err != nil {
		return nil, fmt.Errorf("the job's metrics at %s: %w", redact.URL(w.src.URL), err)
	}
	return res, nil
}
