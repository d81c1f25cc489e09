package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
