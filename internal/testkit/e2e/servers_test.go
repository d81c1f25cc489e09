package e2e

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
	"github.com/cloudprofiler-go/cp/profiler/configsrv"
	"github.com/cloudprofiler-go/cp/protocol"
	"github.com/cloudprofiler-go/cp/sweep/agent"
	"github.com/cloudprofiler-go/cp/sweep/agent/recvagent"
	"github.com/cloudprofiler-go/cp/sweep/agent/sendagent"
	"github.com/cloudprofiler-go/cp/sweep/watch"
	"github.com/cloudprofiler-go/cp/tsc"
	"github.com/cloudprofiler-go/cp/tsc/probing/probeapi"
)

// Every HTTP server of the project is built by httpapi.Serve, which puts
// the token in front of the whole mux. These tests enumerate every route of
// every server, in process and on the real binaries, and ask each without
// the token, with a wrong one and with the right one.

const serverToken = "every-server-token-0123456789"

// routeRequest turns a ServeMux pattern into a request that matches it.
func routeRequest(base, pattern string) (*http.Request, error) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = http.MethodGet, pattern
	}
	path = strings.ReplaceAll(path, "{$}", "")
	path = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(path, "x")
	var body io.Reader
	if method == http.MethodPost || method == http.MethodPut {
		body = strings.NewReader("{}")
	}
	return http.NewRequest(method, base+path, body)
}

// checkRoutes asks every route without the token and with a wrong one
// (401 both) and with the token (anything but 401: the route exists).
func checkRoutes(t *testing.T, name, base string, routes []string) {
	t.Helper()
	if len(routes) == 0 {
		t.Fatalf("%s: no routes to check", name)
	}
	cl := &http.Client{Timeout: 10 * time.Second}
	for _, pattern := range routes {
		for _, auth := range []string{"", "Bearer wrong-token-wrong-token", "Bearer " + serverToken} {
			req, err := routeRequest(base, pattern)
			if err != nil {
				t.Fatal(err)
			}
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := cl.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", name, pattern, err)
			}
			resp.Body.Close()
			right := auth == "Bearer "+serverToken
			if (resp.StatusCode == http.StatusUnauthorized) == right {
				t.Errorf("%s: %s with authorization %q: HTTP %d", name, pattern, auth, resp.StatusCode)
			}
		}
	}
}

type servedServer struct {
	name string
	srv  *httpapi.Server
}

// inProcessServers builds every server of the project as its command does.
func inProcessServers(t *testing.T) []servedServer {
	t.Helper()
	var out []servedServer
	add := func(name string, s *httpapi.Server, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(s.Close)
		out = append(out, servedServer{name, s})
	}
	for _, role := range []agent.Role{sendagent.Role{}, recvagent.Role{}} {
		opts := agent.Options{Role: role, Token: serverToken, Clock: tsc.NewClockHz(2e9)}
		if role.Name() == protocol.RoleReceiver {
			opts.Endpoints = []string{fmt.Sprintf("tcp://127.0.0.1:%d", mustPort(t))}
		}
		a, err := agent.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		resp, err := tsc.NewResponder("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Close() })
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s, err := agent.Serve(ln, a, &probeapi.Client{Responder: resp, Hz: 2e9})
		add(role.Name()+" agent", s, err)
	}
	resp, err := tsc.NewResponder("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Close() })
	s, err := probeapi.Serve("127.0.0.1:0", serverToken, &probeapi.Client{Responder: resp, Hz: 2e9})
	add("clock client", s, err)
	file := filepath.Join(t.TempDir(), "handlers.yaml")
	if err := os.WriteFile(file, []byte("default: {handler: null}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = configsrv.Serve("127.0.0.1:0", serverToken, file)
	add("configuration server", s, err)
	s, err = watch.New(nil, watch.Options{Token: serverToken}).Serve("127.0.0.1:0", serverToken)
	add("watch --http", s, err)
	return out
}

// TestEveryServerAuthenticatesEveryRoute: every route of every server is
// refused without the token (and with a wrong one), and answered with it.
func TestEveryServerAuthenticatesEveryRoute(t *testing.T) {
	for _, s := range inProcessServers(t) {
		routes := s.srv.Routes()
		if !slices.Contains(routes, "GET /metrics") {
			t.Errorf("%s has no /metrics: %v", s.name, routes)
		}
		checkRoutes(t, s.name, s.srv.URL(), append(routes, "GET /no/such/path"))
	}
}

// TestRealServersAuthenticateEveryRoute starts every serving command with a
// token and walks the routes its server has (taken from the in-process
// build of the same server). It includes the configuration server, whose
// PUT once went through without the token: the file stays as it was.
func TestRealServersAuthenticateEveryRoute(t *testing.T) {
	routes := map[string][]string{}
	for _, s := range inProcessServers(t) {
		routes[s.name] = append(s.srv.Routes(), "GET /no/such/path")
	}
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokFile, []byte(serverToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	handlers := filepath.Join(dir, "handlers.yaml")
	const original = "default: {handler: null}\n"
	if err := os.WriteFile(handlers, []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(name, ready string, addrRe *regexp.Regexp, bin string, args ...string) string {
		p, err := Start(filepath.Join(binDir, bin), args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Signal(syscall.SIGKILL); _ = p.Wait(5 * time.Second) })
		if !p.WaitForLine(ready, 15*time.Second) {
			t.Fatalf("%s did not start:\n%s", name, p.Stderr.String())
		}
		m := addrRe.FindStringSubmatch(p.Stderr.String())
		if m == nil {
			t.Fatalf("%s: no address in:\n%s", name, p.Stderr.String())
		}
		return "http://" + m[1]
	}
	agentAddrRe := regexp.MustCompile(`control http://([^/\s]+)/v1`)
	recvPort := mustPort(t)
	bases := map[string]string{
		"sender agent": start("dgsend --agent", "agent ready", agentAddrRe, "dgsend", "--agent", "--metrics-addr", "127.0.0.1:0", "--token-file", tokFile, "--calibrate", "30ms"),
		"receiver agent": start("dgrecv --agent", "agent ready", agentAddrRe, "dgrecv", "--agent", "--metrics-addr", "127.0.0.1:0", "--token-file", tokFile, "--calibrate", "30ms",
			"--bind", fmt.Sprintf("tcp://127.0.0.1:%d", recvPort)),
		"clock client": start("cpsweep clock client", "clock client ready", regexp.MustCompile(`control http://([^/\s]+)/v1`), "cpsweep", "clock", "client",
			"--listen", fmt.Sprintf("127.0.0.1:%d", mustPort(t)), "--control", fmt.Sprintf("127.0.0.1:%d", mustPort(t)), "--token-file", tokFile, "--calibrate", "30ms"),
		"configuration server": start("cpsweep profiler serve", "configuration server ready", regexp.MustCompile(`ready: http://([^/\s]+)/v1`), "cpsweep", "profiler", "serve",
			"--file", handlers, "--listen", fmt.Sprintf("127.0.0.1:%d", mustPort(t)), "--token-file", tokFile),
	}
	// watch --http watches the sender agent started above.
	bases["watch --http"] = start("cpsweep watch --http", "web view", regexp.MustCompile(`web view: http://([^/\s]+)/`), "cpsweep", "watch",
		"--sender", strings.TrimPrefix(bases["sender agent"], "http://"), "--token-file", tokFile, "--http", fmt.Sprintf("127.0.0.1:%d", mustPort(t)), "--json", "--for", "1m")

	// The configuration server's PUT without the token: 401, file unchanged.
	put, _ := http.NewRequest(http.MethodPut, bases["configuration server"]+configsrv.PathHandlers, bytes.NewBufferString("default: {handler: counters}\n"))
	resp, err := http.DefaultClient.Do(put)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if b, _ := os.ReadFile(handlers); resp.StatusCode != http.StatusUnauthorized || string(b) != original {
		t.Fatalf("PUT without the token: HTTP %d, handlers file now %q", resp.StatusCode, b)
	}
	for name, base := range bases {
		checkRoutes(t, name+" (real binary)", base, routes[name])
	}
}

// TestNoHTTPServerOutsideHTTPAPI: no source file but httpapi's builds an
// http.Server or calls a package-level serve function, so no server can be
// made without the token check and the limits; nor an http.Client or a
// package-level request (http.Get, http.DefaultClient), so that no token
// follows a redirect to another origin (httpapi.NewClient).
func TestNoHTTPServerOutsideHTTPAPI(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasPrefix(rel, filepath.Join("internal", "httpapi")) {
			return nil
		}
		fs := token.NewFileSet()
		f, err := parser.ParseFile(fs, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if sel, ok := n.Type.(*ast.SelectorExpr); ok && isPkg(sel.X, "http") && (sel.Sel.Name == "Server" || sel.Sel.Name == "Client") {
					found = append(found, fmt.Sprintf("%s: http.%s{}", fs.Position(n.Pos()), sel.Sel.Name))
				}
			case *ast.SelectorExpr:
				if isPkg(n.X, "http") && (n.Sel.Name == "ListenAndServe" || n.Sel.Name == "Serve" || n.Sel.Name == "ListenAndServeTLS" || n.Sel.Name == "ServeTLS" ||
					n.Sel.Name == "Get" || n.Sel.Name == "Post" || n.Sel.Name == "Head" || n.Sel.Name == "PostForm" || n.Sel.Name == "DefaultClient") {
					found = append(found, fmt.Sprintf("%s: http.%s", fs.Position(n.Pos()), n.Sel.Name))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Fatalf("HTTP served or requested outside httpapi (Serve, NewClient):\n%s", strings.Join(found, "\n"))
	}
}

func isPkg(x ast.Expr, name string) bool {
	id, ok := x.(*ast.Ident)
	return ok && id.Name == name
}
