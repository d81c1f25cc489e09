package probeapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/tsc/probing"
)

// startClients runs n TSC clients in this process (they share the TSC, so
// every relation must contain the identity).
func startClients(t *testing.T, n int, token string) []probing.Node {
	t.Helper()
	var nodes []probing.Node
	for i := 0; i < n; i++ {
		r, err := tsc.NewResponder("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c := &Client{Responder: r, Hz: 2e9}
		srv, err := httpapi.Serve(httpapi.ServerConfig{Addr: "127.0.0.1:0", Token: token, Routes: c.Routes()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close(); r.Close() })
		nodes = append(nodes, probing.Node{Name: string(rune('a' + i)), Control: srv.Addr()})
	}
	return nodes
}

const testToken = "probing-test-token-0123"

func TestSessionsRelationAndTranslate(t *testing.T) {
	nodes := startClients(t, 3, testToken)
	set := Settings{Count: 50, Timeout: 100 * time.Millisecond, Token: testToken}
	before, err := Probe(context.Background(), nodes, set)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Pairs) != 6 {
		t.Fatalf("%d pairs, want all 6 ordered pairs of 3 nodes", len(before.Pairs))
	}
	mid := tsc.Read()
	time.Sleep(50 * time.Millisecond)
	after, err := Probe(context.Background(), nodes, set)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := probing.Relate([]*probing.Session{before, after}, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(rf.Relations) != 2 {
		t.Fatalf("%d relations, want b->a and c->a", len(rf.Relations))
	}
	for _, r := range rf.Relations {
		if r.Status != "ok" || r.PaperStatus != "ok" || r.AlphaLo > 1 || r.AlphaHi < 1 {
			t.Fatalf("relation %+v should contain alpha = 1 (one host)", r)
		}
	}
	// A value in the middle: the identity is inside both bounds, and the
	// tighter one is not wider.
	tr, err := rf.Translate("b", mid)
	if err != nil || !tr.Tighter.Contains(float64(mid)) || tr.Paper == nil || !tr.Paper.Contains(float64(mid)) || tr.Tighter.Err > tr.Paper.Err+1 {
		t.Fatalf("translate: %+v (%v)", tr, err)
	}
	if tr.Network == nil || !tr.Network.Contains(float64(mid)) || tr.Network.Err > tr.Tighter.Err+1 {
		t.Fatalf("network bound: %+v (%s)", tr.Network, tr.NetworkNote)
	}
	if _, err := rf.Translate("b", 1); err == nil {
		t.Fatal("a value outside the probed window was translated")
	}
	b, _ := json.Marshal(rf)
	var back probing.RelationFile
	if err := json.Unmarshal(b, &back); err != nil || back.FormatVersion != 1 || len(back.Sessions) != 2 {
		t.Fatalf("relation file does not round-trip: %v", err)
	}
	if _, err := probing.Relate([]*probing.Session{before}, "a"); err == nil {
		t.Fatal("one session accepted")
	}
	if _, err := probing.Relate([]*probing.Session{before, after}, "zz"); err == nil {
		t.Fatal("unknown reference accepted")
	}
}

func TestClientAPIRefusesBadRequests(t *testing.T) {
	nodes := startClients(t, 1, testToken)
	for _, tc := range []struct {
		token, body string
		want        int
	}{
		{"", `{"peer":"127.0.0.1:1","count":1}`, http.StatusUnauthorized},
		{testToken, `{"peer":"127.0.0.1:1","count":0}`, http.StatusBadRequest},
		{testToken, `{"peer":"127.0.0.1:1","count":1,"extra":1}`, http.StatusBadRequest},
		{testToken, `not json`, http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+nodes[0].Control+PathProbe, strings.NewReader(tc.body))
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%q with token %q: %d, want %d", tc.body, tc.token, resp.StatusCode, tc.want)
		}
	}
}
