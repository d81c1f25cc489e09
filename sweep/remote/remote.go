package remote

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/protocol"
)

// Agent talks to one agent's control API.
type Agent struct {
	Addr  string // host:port
	Token string
	http  *http.Client
}

// Bounds of the control requests: a status poll (or info, or stop) that
// takes longer than ControlTimeout counts as a failed poll; a start may
// take StartTimeout (the agent prepares the trial before it answers).
const (
	ControlTimeout = 3 * time.Second
	StartTimeout   = 15 * time.Second
)

// New returns a client for the agent at addr (host:port).
func New(addr, token string) *Agent {
	return &Agent{Addr: addr, Token: token, http: httpapi.NewClient(0)}
}

// StatusError is an agent's refusal of a request.
type StatusError struct {
	Agent string
	Code  int
	Msg   string
}

func (e *StatusError) Error() string {
	switch e.Code {
	case http.StatusUnauthorized:
		return fmt.Sprintf("agent %s refused the token: pass --token-file with the token the agents were started with", e.Agent)
	case 0:
		return fmt.Sprintf("agent %s: %s", e.Agent, e.Msg)
	}
	if e.Msg == "" {
		return fmt.Sprintf("agent %s answered with an error and no reason (HTTP %d)", e.Agent, e.Code)
	}
	// The agent's reason is for a person; the status is the API's (the
	// JSON and the code keep it).
	return fmt.Sprintf("agent %s: %s", e.Agent, e.Msg)
}

func (c *Agent) do(ctx context.Context, timeout time.Duration, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.Addr+path, body)
	if err != nil {
		return fmt.Errorf("agent %s: %w", c.Addr, err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req) // a GET closed early is asked again (httpapi.NewClient)
	if err != nil {
		return fmt.Errorf("agent %s is unreachable: %w", c.Addr, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("agent %s: read reply: %w", c.Addr, err)
	}
	if resp.StatusCode >= 300 {
		var e struct{ Error string }
		_ = json.Unmarshal(data, &e)
		return &StatusError{Agent: c.Addr, Code: resp.StatusCode, Msg: e.Error}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("agent %s: bad reply: %w", c.Addr, err)
		}
	}
	return nil
}

// Info describes the agent.
func (c *Agent) Info(ctx context.Context) (protocol.AgentInfo, error) {
	var info protocol.AgentInfo
	return info, c.do(ctx, ControlTimeout, http.MethodGet, protocol.PathInfo, nil, &info)
}

// Start begins a trial (cfg is a SenderTrial or a ReceiverTrial).
func (c *Agent) Start(ctx context.Context, cfg any) (protocol.TrialStatus, error) {
	var st protocol.TrialStatus
	return st, c.do(ctx, StartTimeout, http.MethodPost, protocol.PathTrial, cfg, &st)
}

// Status returns the current or last trial's status.
func (c *Agent) Status(ctx context.Context) (protocol.TrialStatus, error) {
	var st protocol.TrialStatus
	return st, c.do(ctx, ControlTimeout, http.MethodGet, protocol.PathTrial, nil, &st)
}

// Stop ends the current trial early.
func (c *Agent) Stop(ctx context.Context) (protocol.TrialStatus, error) {
	var st protocol.TrialStatus
	return st, c.do(ctx, ControlTimeout, http.MethodPost, protocol.PathStop, nil, &st)
}

// FetchProfile downloads the agent's last profiled trial's logs into dir
// (created if needed) and returns the files written. Only plain file names
// are accepted from the archive.
func (c *Agent) FetchProfile(ctx context.Context, dir string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Addr+protocol.PathProfile, nil)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", c.Addr, err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := httpapi.NewClient(10 * time.Minute).Do(req)
	if err != nil {
		return nil, fmt.Errorf("agent %s is unreachable: %w", c.Addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		_ = json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&e)
		return nil, &StatusError{Agent: c.Addr, Code: resp.StatusCode, Msg: "profile: " + e.Error}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	tr := tar.NewReader(resp.Body)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return files, fmt.Errorf("agent %s: profile archive: %w", c.Addr, err)
		}
		name := filepath.Base(h.Name)
		if h.Typeflag != tar.TypeReg || name != h.Name || name == "." || name == ".." {
			return files, fmt.Errorf("agent %s: profile archive holds %q: not a plain file name", c.Addr, h.Name)
		}
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			return files, err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return files, fmt.Errorf("agent %s: profile %s: %w", c.Addr, name, err)
		}
		files = append(files, path)
	}
}
