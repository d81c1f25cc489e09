package layout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/cloudprofiler-go/cp"

// pkg is one package of the module as go list describes it.
type pkg struct {
	ImportPath string
	Dir        string
	Imports    []string
	Deps       []string
	GoFiles    []string
}

// listAll is every package of the module with its imports and deps.
func listAll(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json", module+"/...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	all := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		all[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")] = p
	}
	return all
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("module root not at %s", dir)
	}
	return dir
}

func inModule(deps []string) []string {
	var out []string
	for _, d := range deps {
		if d == module || strings.HasPrefix(d, module+"/") {
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(d, module), "/"))
		}
	}
	return out
}

func matches(p, pattern string) bool {
	if strings.HasSuffix(pattern, "/...") {
		base := strings.TrimSuffix(pattern, "/...")
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

// TestBinariesLinkOnlyTheirOwnSide: dgsend links no receiver, no sweep
// controller, no analysis and no plotting; dgrecv no sender, no sweep
// controller and no analysis. (go list -deps; docs/layout.md)
func TestBinariesLinkOnlyTheirOwnSide(t *testing.T) {
	all := listAll(t)
	for _, tc := range []struct {
		binary    string
		forbidden []string
	}{
		{"cmd/dgsend", []string{"receiver", "objfactory", "sweep", "sweep/agent/recvagent", "analysis/...", "sweep/watch"}},
		{"cmd/dgrecv", []string{"sweep", "sweep/agent/sendagent", "sender", "analysis/...", "sweep/watch"}},
	} {
		deps := inModule(all[tc.binary].Deps)
		if len(deps) == 0 {
			t.Fatalf("%s: no dependencies listed", tc.binary)
		}
		for _, d := range deps {
			for _, f := range tc.forbidden {
				if matches(d, f) {
					t.Errorf("%s links %s", tc.binary, d)
				}
			}
		}
		for _, d := range all[tc.binary].Deps {
			if strings.HasPrefix(d, "k8s.io/") {
				t.Errorf("%s links the Kubernetes API types (%s): they are for the deploy tests only", tc.binary, d)
				break
			}
		}
		for _, d := range all[tc.binary].Deps {
			if strings.HasPrefix(d, "gonum.org/") {
				t.Errorf("%s links the plotting library (%s)", tc.binary, d)
				break
			}
		}
	}
}

// TestTheEngineOnlyInTheJob: the Benthos engine (about 400 packages) is
// linked by cpjob alone; the harness's binaries never carry it.
func TestTheEngineOnlyInTheJob(t *testing.T) {
	all := listAll(t)
	for _, binary := range []string{"cmd/dgsend", "cmd/dgrecv", "cmd/cpsweep"} {
		for _, d := range all[binary].Deps {
			if strings.HasPrefix(d, "github.com/redpanda-data/") {
				t.Errorf("%s links the stream engine (%s): only cmd/cpjob may", binary, d)
				break
			}
		}
	}
	if !slices.ContainsFunc(all["cmd/cpjob"].Deps, func(d string) bool { return strings.HasPrefix(d, "github.com/redpanda-data/benthos/") }) {
		t.Error("cmd/cpjob does not link the engine: the test looks at the wrong package")
	}
}

// TestImportRules: who may import whom, for the rules the compiler does not
// enforce by internal/ directories.
func TestImportRules(t *testing.T) {
	all := listAll(t)
	rules := []struct {
		from, reason string
		forbidden    []string
	}{
		{"tsc/...", "the clocks know nothing of profiling or sweeps", []string{"profiler/...", "sweep/..."}},
		{"protocol", "the contract between the binaries is data only: no role (sender, receiver), no sweep", []string{"sender", "receiver", "sweep", "sweep/agent/...", "analysis/...", "objfactory", "driver/...", "rundir"}},
		{"sweep/agent", "the agent is role-agnostic: each binary links only its role", []string{"receiver", "sweep", "sweep/agent/recvagent", "sweep/agent/sendagent"}},
		{"sender", "the sender is not the receiver's or the controller's", []string{"receiver", "sweep/...", "analysis/..."}},
		{"receiver", "the receiver is not the sender's or the controller's", []string{"sweep/...", "analysis/..."}},
		{"profiler", "the profiler is a library of its own", []string{"sweep/...", "analysis/...", "sender", "receiver"}},
		{"internal/httpapi", "the request policy imports nothing that measures", []string{"sender", "receiver", "sweep/...", "profiler/...", "tsc/..."}},
		{"internal/inject", "internal/ holds leaf helpers: they import no measuring package (docs/layout.md)", []string{"tsc/...", "sender", "receiver", "profiler/...", "sweep/...", "analysis/...", "stage", "objfactory", "driver/..."}},
		{"internal/atomicfile", "internal/ holds leaf helpers", []string{"tsc/...", "sender", "receiver", "profiler/...", "sweep/...", "analysis/...", "stage"}},
		{"internal/redact", "internal/ holds leaf helpers", []string{"tsc/...", "sender", "receiver", "profiler/...", "sweep/...", "analysis/...", "stage", "driver/..."}},
		{"internal/termsafe", "internal/ holds leaf helpers", []string{"tsc/...", "sender", "receiver", "profiler/...", "sweep/...", "analysis/...", "stage"}},
		{"analysis", "the join knows nothing of the activity graph, which consumes it (all the graph's code is in analysis/activity)", []string{"analysis/activity", "analysis/report"}},
		{"analysis/activity", "the activity graph is analysis; the live view is sweep/watch's", []string{"sweep/...", "analysis/report"}},
		{"analysis/...", "the analyses read run directories; they import nothing of the sweep that writes them (an arrow back up)", []string{"sweep/..."}},
		{"trialcfg", "a trial's settings are data, embedded by the plan, the protocol and both roles: they import nothing that measures", []string{"sender/...", "receiver/...", "sweep/...", "profiler/...", "tsc/...", "stage", "driver/...", "analysis/...", "rundir"}},
		{"limits", "what limits a run is worked out once, from the run's records, for the sweep's lines, summary.json, the report and the agreement alike: it imports neither the sweep nor an analysis", []string{"sweep/...", "analysis/...", "sender", "receiver", "driver/...", "profiler/..."}},
		{"sweep/verdict", "the rules judge what the agents reported: they know nothing of agents' transport, the search or the sweep", []string{"sweep", "sweep/search", "sweep/agent/...", "protocol", "sender", "receiver", "driver/...", "analysis/...", "profiler/..."}},
		{"sweep/rundiag", "offline diagnosis reads a run directory: it knows nothing of the sweep that wrote it, the agents or the search", []string{"sweep", "sweep/search", "sweep/agent/...", "sweep/remote", "analysis/..."}},
		{"capacity", "a stage measured alone shares nothing with the sweep", []string{"sweep/...", "analysis/...", "rundir", "limits"}},
		{"sweep/search", "the search is driven by its TrialFunc: it reads trials and results (rundir), and knows nothing of agents, roles or the sweep that drives it", []string{"sweep", "sweep/agent/...", "protocol", "sender", "receiver", "driver/...", "analysis/...", "profiler/..."}},
		{"sut/...", "the reference job is the harness's subject, not a part of it: it speaks the wire format through the drivers and links nothing that measures it", []string{"sweep/...", "analysis/...", "sender", "receiver", "objfactory", "rundir", "limits", "cmd/..."}},
		{"rundir", "the run directory's owner is below the sweep that writes it and the analyses that read it; it records the agents' data-only contract (protocol)", []string{"sweep", "sweep/agent/...", "sweep/discover", "sweep/watch", "analysis/...", "cmd/..."}},
	}
	for name, p := range all {
		for _, imp := range inModule(p.Imports) {
			if matches(imp, "internal/testkit/...") {
				t.Errorf("%s imports the test kit (%s) outside a test", name, imp)
			}
		}
		for _, r := range rules {
			if !matches(name, r.from) {
				continue
			}
			for _, imp := range inModule(p.Imports) {
				for _, f := range r.forbidden {
					if matches(imp, f) {
						t.Errorf("%s imports %s: %s", name, imp, r.reason)
					}
				}
			}
		}
	}
}

// TestEveryFileHoldsItsConcern: a file is as large as its one concern (no
// cap on lines: a cap split files by count, not by concern), so the rule
// is that every package has a doc.go and every source file declares
// something (a file left empty by a move is removed).
func TestEveryFileHoldsItsConcern(t *testing.T) {
	all := listAll(t)
	for name, p := range all {
		if _, err := os.Stat(filepath.Join(p.Dir, "doc.go")); err != nil && len(p.GoFiles) > 0 && !strings.HasPrefix(name, "cmd/") && !strings.HasPrefix(name, "scripts/") {
			t.Errorf("%s has no doc.go", name)
		}
		files, _ := filepath.Glob(filepath.Join(p.Dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") || filepath.Base(f) == "doc.go" {
				continue
			}
			rel, _ := filepath.Rel(root(t), f)
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(af.Decls) == 0 {
				t.Errorf("%s declares nothing: remove it", rel)
			}
		}
	}
}

// TestProfilerCoreIsLight: the profiler's core, which a job's authors
// embed, links at most 30 packages outside the standard library, and no
// metrics library, HTTP server or client, sweep, broker client or
// plotting (its configuration server and metrics are packages of their
// own: profiler/configsrv, profiler/profmetrics).
func TestProfilerCoreIsLight(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", module+"/profiler")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var deps []string
	for _, d := range strings.Fields(string(out)) {
		if d != module+"/profiler" {
			deps = append(deps, d)
		}
	}
	if len(deps) > 30 || len(deps) == 0 {
		t.Errorf("the profiler's core links %d packages outside the standard library (at most 30):\n%s", len(deps), strings.Join(deps, "\n"))
	}
	all := listAll(t)
	for _, d := range all["profiler"].Deps {
		for _, f := range []string{"github.com/prometheus/", "net/http", "gonum.org/", "github.com/nats-io/", "github.com/redis/", "github.com/twmb/", module + "/internal/httpapi", module + "/sweep", module + "/driver"} {
			if d == f || strings.HasPrefix(d, f+"/") || strings.HasSuffix(f, "/") && strings.HasPrefix(d, f) {
				t.Errorf("the profiler's core links %s", d)
			}
		}
	}
	t.Logf("the profiler's core links %d packages outside the standard library", len(deps))
}

// TestOneAtomicWriter: a file is replaced whole in one place
// (internal/atomicfile): no other source calls os.Rename or os.CreateTemp,
// the parts of a temp-then-rename written five times before.
func TestOneAtomicWriter(t *testing.T) {
	var found []string
	eachSource(t, []string{filepath.Join("internal", "atomicfile")}, func(rel string, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" && (sel.Sel.Name == "Rename" || sel.Sel.Name == "CreateTemp") {
					found = append(found, fmt.Sprintf("%s: os.%s", rel, sel.Sel.Name))
				}
			}
			return true
		})
	})
	if len(found) > 0 {
		t.Errorf("files replaced outside internal/atomicfile:\n%s", strings.Join(found, "\n"))
	}
}

// TestBrokerClientsOnlyWhereAsked: a broker's client is linked only by the
// programs that register its driver (cmd/internal/brokers): dgsend and
// dgrecv, which may be asked to publish into or consume from any of the
// four (so they link all of them). The driver's core (URL parsing and the
// registry), the sweep, the agents' protocol, the analyses and cpsweep
// link none (cpsweep's demo links the NATS server, not a client).
func TestBrokerClientsOnlyWhereAsked(t *testing.T) {
	clients := []string{"github.com/nats-io/nats.go", "github.com/redis/go-redis/v9", "github.com/twmb/franz-go/pkg/kgo"}
	all := listAll(t)
	for _, name := range []string{"driver", "sweep", "protocol", "sweep/agent", "analysis", "analysis/report", "cmd/cpsweep", "sender", "receiver"} {
		for _, d := range all[name].Deps {
			for _, c := range clients {
				if d == c {
					t.Errorf("%s links the broker client %s", name, c)
				}
			}
		}
	}
	for _, bin := range []string{"cmd/dgsend", "cmd/dgrecv"} {
		for _, c := range clients {
			found := false
			for _, d := range all[bin].Deps {
				found = found || d == c
			}
			if !found {
				t.Errorf("%s does not link %s: it could not reach that broker", bin, c)
			}
		}
	}
}

// TestPlottingOnlyInTheReport: the plotting library is the report's
// (analysis/report draws sweep.svg through the sweep's Plot hook): the
// sweep and the run-directory package link none of it.
func TestPlottingOnlyInTheReport(t *testing.T) {
	all := listAll(t)
	for _, name := range []string{"sweep", "rundir", "protocol", "sweep/agent"} {
		for _, d := range all[name].Deps {
			if strings.HasPrefix(d, "gonum.org/") {
				t.Errorf("%s links the plotting library (%s)", name, d)
				break
			}
		}
	}
}

// runDirNames are the files of a run directory (rundir's names.go).
var runDirNames = []string{"format.json", "config.json", "summary.json", "relation.json", "trials.json", "trials.csv",
	"diagnosis.json", "analysis.json", "analysis.csv", "pag.json", "pag.csv", "report.html", "sweep.svg", ".hgrm"}

// TestRunDirectoryNamesOnlyInRundir: rundir owns the run directory's
// file names; no other package's code spells one as a name (it names
// them through rundir's constants and reads and writes them through its
// methods; prose may mention them).
func TestRunDirectoryNamesOnlyInRundir(t *testing.T) {
	var found []string
	eachSource(t, []string{"rundir", "scripts"}, func(rel string, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			// a literal that is a file's name, not prose that mentions one
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && !strings.ContainsAny(lit.Value, " \n") {
				for _, name := range runDirNames {
					if v := strings.Trim(lit.Value, "`\""); v == name || strings.HasSuffix(v, name) && strings.HasPrefix(name, ".") {
						found = append(found, fmt.Sprintf("%s: %s", rel, lit.Value))
					}
				}
			}
			return true
		})
	})
	if len(found) > 0 {
		t.Errorf("a run directory's file names spelled outside rundir:\n%s", strings.Join(found, "\n"))
	}
}

// eachSource parses every non-test Go file of the module but those under
// testdata, internal/testkit and the folders skip names (relative to the
// module's root), and hands it to fn with its relative path.
func eachSource(t *testing.T, skip []string, fn func(rel string, f *ast.File)) {
	t.Helper()
	dir := root(t)
	skip = append(skip, filepath.Join("internal", "testkit"))
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || slices.Contains(skip, rel)) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		fn(rel, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOneNamePerThing: no type or constant of this module has a second
// permanent name in another package (`type Report = rundir.Summary`,
// `const Block = trialcfg.Block`): 40 did, and a reader met each thing
// under two names. A package uses the other's name.
func TestOneNamePerThing(t *testing.T) {
	const module = "github.com/cloudprofiler-go/cp/"
	var found []string
	eachSource(t, nil, func(rel string, f *ast.File) {
		ours := map[string]bool{} // the file's imports of this module, by name
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if !strings.HasPrefix(path, module) {
				continue
			}
			name := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			ours[name] = true
		}
		second := func(e ast.Expr) bool {
			sel, ok := e.(*ast.SelectorExpr)
			if !ok {
				return false
			}
			x, ok := sel.X.(*ast.Ident)
			return ok && ours[x.Name]
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, s := range g.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Assign.IsValid() && second(s.Type) {
						found = append(found, fmt.Sprintf("%s: type %s", rel, s.Name.Name))
					}
				case *ast.ValueSpec:
					if g.Tok == token.CONST && len(s.Values) == 1 && second(s.Values[0]) {
						found = append(found, fmt.Sprintf("%s: const %s", rel, s.Names[0].Name))
					}
				}
			}
		}
	})
	if len(found) > 0 {
		t.Errorf("second names of this module's types and constants:\n%s", strings.Join(found, "\n"))
	}
}

// TestRunDirectoryPathsOnlyInRundir: a path into a run directory is
// built only by rundir's own methods: no filepath.Join outside it takes
// one of rundir's names (19 calls in 11 files built them once).
func TestRunDirectoryPathsOnlyInRundir(t *testing.T) {
	var found []string
	eachSource(t, []string{"rundir"}, func(rel string, f *ast.File) {
		name := ""
		for _, imp := range f.Imports {
			if strings.Trim(imp.Path.Value, `"`) == "github.com/cloudprofiler-go/cp/rundir" {
				name = "rundir"
				if imp.Name != nil {
					name = imp.Name.Name
				}
			}
		}
		if name == "" {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if fn, ok := call.Fun.(*ast.SelectorExpr); !ok || fn.Sel.Name != "Join" || fmt.Sprint(fn.X) != "filepath" {
				return true
			}
			for _, a := range call.Args {
				if sel, ok := a.(*ast.SelectorExpr); ok && fmt.Sprint(sel.X) == name {
					found = append(found, fmt.Sprintf("%s: filepath.Join(..., %s.%s, ...)", rel, name, sel.Sel.Name))
				}
			}
			return true
		})
	})
	if len(found) > 0 {
		t.Errorf("paths into a run directory built outside rundir:\n%s", strings.Join(found, "\n"))
	}
}
