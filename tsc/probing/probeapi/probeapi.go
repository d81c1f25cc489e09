package probeapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/tsc/probing"
	"golang.org/x/sys/unix"
)

// API paths of a TSC client.
const (
	PathInfo  = "/v1/clock/info"
	PathProbe = "/v1/clock/probe"
)

// ProbeRequest asks a client to probe a peer's responder.
type ProbeRequest struct {
	Peer    string        `json:"peer"` // UDP address
	Count   int           `json:"count"`
	Gap     time.Duration `json:"gap_ns"`
	Timeout time.Duration `json:"timeout_ns"`
	Nonce   uint64        `json:"nonce"`
}

// ProbeResult is what the client saw: it is A, the peer B.
type ProbeResult struct {
	Probes []tsc.Probe    `json:"probes"`
	Stats  tsc.ProbeStats `json:"stats"`
}

// Client is a TSC client: a UDP responder plus the HTTP control handler.
type Client struct {
	Responder *tsc.Responder
	Hz        float64
	Advertise string // UDP address peers should use (default: the bound one)
	// Stamping is how the client stamps its probes (the zero value: the
	// TSC, no injected delay); tests simulate nodes with it.
	Stamping tsc.Stamping

	once  sync.Once
	slots chan struct{} // one per round running (MaxConcurrentProbes)
}

// Info describes this client.
func (c *Client) Info() probing.Info {
	host, _ := os.Hostname()
	f, _ := tsc.DetectFeatures()
	info := probing.Info{Host: host, Machine: probing.BootID(), UDP: c.Responder.Addr(), TSCHz: c.Hz, Features: f}
	if c.Advertise != "" {
		info.UDP = c.Advertise
	}
	var tx unix.Timex
	if state, err := unix.Adjtimex(&tx); err == nil {
		info.NTPMaxErrorUs, info.NTPEstErrorUs = tx.Maxerror, tx.Esterror
		info.NTPSynced = state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0
	}
	return info
}

// Bounds of the probe API: a request holds an OS thread and a UDP socket
// while it runs, so its time and the number running at once are bounded.
const (
	// MaxProbeRound is the longest a round of probes may run; it matches
	// the controller's HTTP timeout, after which nobody reads the answer.
	MaxProbeRound = 60 * time.Second
	// MaxConcurrentProbes is how many rounds run at once; a controller
	// probes one pair at a time, so more means another caller (429).
	MaxConcurrentProbes = 2
)

// Routes are the client's control API (served through httpapi.Serve, which
// adds the token check and the limits).
func (c *Client) Routes() []httpapi.Route {
	c.once.Do(func() { c.slots = make(chan struct{}, MaxConcurrentProbes) })
	info := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { httpapi.ReplyJSON(w, http.StatusOK, c.Info()) })
	return []httpapi.Route{{Pattern: "GET " + PathInfo, Handler: info}, {Pattern: "POST " + PathProbe, Handler: http.HandlerFunc(c.handleProbe)}}
}

// Serve serves c's API on addr, with the token on every route.
func Serve(addr, token string, c *Client) (*httpapi.Server, error) {
	return httpapi.Serve(httpapi.ServerConfig{Name: "clock client", Addr: addr, Token: token, Routes: c.Routes()})
}

// handleProbe runs one round for the caller. The round ends when the
// caller goes away or after MaxProbeRound, whichever comes first.
func (c *Client) handleProbe(w http.ResponseWriter, r *http.Request) {
	var req ProbeRequest
	if err := httpapi.DecodeJSON(w, r, 1<<16, &req); err != nil {
		httpapi.ReplyRequestError(w, err)
		return
	}
	if req.Count < 1 || req.Count > 100000 || req.Peer == "" || len(req.Peer) > 256 {
		httpapi.ReplyError(w, http.StatusBadRequest, errors.New("a probe request needs a peer and a count between 1 and 100000"))
		return
	}
	if req.Gap < 0 || req.Gap > 100*time.Millisecond || req.Timeout < 0 || req.Timeout > 5*time.Second {
		httpapi.ReplyError(w, http.StatusBadRequest, errors.New("a probe request's gap must be 0 to 100ms and its timeout 0 to 5s"))
		return
	}
	if req.Timeout <= 0 {
		req.Timeout = 100 * time.Millisecond
	}
	if gaps := time.Duration(req.Count) * req.Gap; gaps > MaxProbeRound {
		httpapi.ReplyError(w, http.StatusBadRequest, fmt.Errorf("%d probes %v apart take %v, more than a round may (%v): use fewer probes or a shorter gap", req.Count, req.Gap, gaps, MaxProbeRound))
		return
	}
	select {
	case c.slots <- struct{}{}:
		defer func() { <-c.slots }()
	default:
		httpapi.ReplyError(w, http.StatusTooManyRequests, fmt.Errorf("%d probe rounds are running on this client already; try again when one ends", MaxConcurrentProbes))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), MaxProbeRound)
	defer cancel()
	probes, st, err := tsc.ProbePeerOpts(ctx, req.Peer, req.Count, req.Gap, req.Timeout, req.Nonce, c.Stamping)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		httpapi.ReplyError(w, http.StatusGatewayTimeout, fmt.Errorf("the round did not end within %v (%d of %d probes sent): use fewer probes or a shorter timeout", MaxProbeRound, st.Sent, req.Count))
	case err != nil:
		httpapi.ReplyError(w, http.StatusBadGateway, err)
	default:
		httpapi.ReplyJSON(w, http.StatusOK, ProbeResult{Probes: probes, Stats: st})
	}
}

// Settings of a probing round.
type Settings struct {
	Count   int
	Gap     time.Duration
	Timeout time.Duration
	Token   string
}

// Probe runs one session: it describes every node, then asks every ordered
// pair (A, B) for Count round trips from A to B, one pair at a time (a
// quiet network), each with a fresh nonce.
func Probe(ctx context.Context, nodes []probing.Node, s Settings) (*probing.Session, error) {
	if len(nodes) < 2 {
		return nil, errors.New("probing needs at least two TSC clients")
	}
	cl := httpapi.NewClient(60 * time.Second)
	ses := &probing.Session{Started: time.Now().UTC()}
	for _, n := range nodes {
		if err := call(ctx, cl, http.MethodGet, n.Control, PathInfo, s.Token, nil, &n.Info); err != nil {
			return nil, err
		}
		n.Info.UDP = reachable(n.Info.UDP, n.Control)
		ses.Nodes = append(ses.Nodes, n)
	}
	for _, a := range ses.Nodes {
		for _, b := range ses.Nodes {
			if a.Name == b.Name {
				continue
			}
			var nonce [8]byte
			_, _ = rand.Read(nonce[:])
			var res ProbeResult
			req := ProbeRequest{Peer: b.Info.UDP, Count: s.Count, Gap: s.Gap, Timeout: s.Timeout, Nonce: binary.LittleEndian.Uint64(nonce[:])}
			if err := call(ctx, cl, http.MethodPost, a.Control, PathProbe, s.Token, req, &res); err != nil {
				return nil, fmt.Errorf("%s probing %s: %w", a.Name, b.Name, err)
			}
			ses.Pairs = append(ses.Pairs, probing.Pair{A: a.Name, B: b.Name, Probes: res.Probes, Stats: res.Stats})
		}
	}
	return ses, nil
}

func call(ctx context.Context, cl *http.Client, method, addr, path, token string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, body)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return fmt.Errorf("TSC client %s unreachable: %w", addr, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if resp.StatusCode >= 300 {
		var e struct{ Error string }
		_ = json.Unmarshal(data, &e)
		return fmt.Errorf("TSC client %s: %s (HTTP %d)", addr, e.Error, resp.StatusCode)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("TSC client %s: bad reply: %w", addr, err)
	}
	return nil
}

// reachable replaces an unspecified host in a responder's address (bound
// to every interface) by the host its control API was reached at.
func reachable(udp, control string) string {
	host, port, err := net.SplitHostPort(udp)
	if err != nil {
		return udp
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if ch, _, err := net.SplitHostPort(control); err == nil {
			return net.JoinHostPort(ch, port)
		}
	}
	return udp
}

// ProbeEvery probes every ordered pair of nodes once per period for rounds
// rounds (0: until ctx ends) and, after each round from the second on,
// relates the first session to the latest one and hands the result to
// each. Between experiments (or at a low rate during one, §Fig. 2's
// CP_BUSY) this keeps the relations and their Prometheus gauges current.
func ProbeEvery(ctx context.Context, nodes []probing.Node, s Settings, reference string, every time.Duration, rounds int, each func(*probing.RelationFile)) error {
	var first *probing.Session
	for round := 1; rounds == 0 || round <= rounds; round++ {
		ses, err := Probe(ctx, nodes, s)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("probing round %d: %w", round, err)
		}
		if first == nil {
			first = ses
		} else {
			rf, err := probing.Relate([]*probing.Session{first, ses}, reference)
			if err != nil {
				return err
			}
			each(rf)
		}
		if rounds != 0 && round == rounds {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
	return nil
}
