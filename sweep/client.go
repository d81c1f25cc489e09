package sweep

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
)

// Client talks to one agent's control API.
type Client struct {
	Addr  string // host:port
	Token string
	http  *http.Client
}

// NewClient returns a client for the agent at addr (host:port).
func NewClient(addr, token string) *Client {
	return &Client{Addr: addr, Token: token, http: &http.Client{Timeout: 30 * time.Second}}
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
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
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("agent %s unreachable: %w", c.Addr, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("agent %s: read reply: %w", c.Addr, err)
	}
	if resp.StatusCode >= 300 {
		var e struct{ Error string }
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("agent %s: %s (HTTP %d)", c.Addr, e.Error, resp.StatusCode)
		}
		return fmt.Errorf("agent %s: HTTP %d", c.Addr, resp.StatusCode)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("agent %s: bad reply: %w", c.Addr, err)
		}
	}
	return nil
}

// Info describes the agent.
func (c *Client) Info(ctx context.Context) (AgentInfo, error) {
	var info AgentInfo
	return info, c.do(ctx, http.MethodGet, PathInfo, nil, &info)
}

// Start begins a trial (cfg is a SenderTrial or a ReceiverTrial).
func (c *Client) Start(ctx context.Context, cfg any) (TrialStatus, error) {
	var st TrialStatus
	return st, c.do(ctx, http.MethodPost, PathTrial, cfg, &st)
}

// Status returns the current or last trial's status.
func (c *Client) Status(ctx context.Context) (TrialStatus, error) {
	var st TrialStatus
	return st, c.do(ctx, http.MethodGet, PathTrial, nil, &st)
}

// Stop ends the current trial early.
func (c *Client) Stop(ctx context.Context) (TrialStatus, error) {
	var st TrialStatus
	return st, c.do(ctx, http.MethodPost, PathStop, nil, &st)
}

// FetchProfile downloads the agent's last profiled trial's logs into dir
// (created if needed) and returns the files written. Only plain file names
// are accepted from the archive.
func (c *Client) FetchProfile(ctx context.Context, dir string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Addr+PathProfile, nil)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", c.Addr, err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Minute}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("agent %s unreachable: %w", c.Addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("agent %s: profile: HTTP %d: %s", c.Addr, resp.StatusCode, bytes.TrimSpace(data))
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
