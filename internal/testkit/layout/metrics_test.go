package layout

import (
	"path"
	"sort"
	"strings"
	"testing"
)

// TestReadersLinkNoHTTP: what reads a run directory (rundir, the
// analyses, the protocol's data, the clock relations) links no net/http:
// the agents' client is sweep/remote, the probing over the network
// tsc/probing/probeapi, and the Prometheus client (which links net/http)
// lives in the …metrics packages.
func TestReadersLinkNoHTTP(t *testing.T) {
	all := listAll(t)
	var checked []string
	for name, p := range all {
		if !(matches(name, "analysis/...") || name == "rundir" || name == "protocol" || name == "tsc/probing") {
			continue
		}
		checked = append(checked, name)
		for _, d := range p.Deps {
			if d == "net/http" {
				t.Errorf("%s links net/http", name)
			}
		}
	}
	if len(checked) < 5 {
		t.Fatalf("checked only %v: the rule looks at the wrong packages", checked)
	}
}

// TestPrometheusOnlyInMetricsPackages: the Prometheus client is imported
// by the …metrics packages (profmetrics, stagemetrics, ratemetrics, cpumetrics,
// sendmetrics, recvmetrics, clockmetrics), the HTTP server that serves
// them (internal/httpapi) and the commands' wiring; a domain package
// exposes its counters as plain values.
func TestPrometheusOnlyInMetricsPackages(t *testing.T) {
	var importers []string
	for name, p := range listAll(t) {
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/prometheus/client_golang/") {
				importers = append(importers, name)
				if !strings.HasSuffix(path.Base(name), "metrics") && name != "internal/httpapi" && !matches(name, "cmd/...") {
					t.Errorf("%s imports the Prometheus client (%s): move its collector into a …metrics package", name, imp)
				}
				break
			}
		}
	}
	sort.Strings(importers)
	if len(importers) < 6 {
		t.Fatalf("importers %v: the rule looks at the wrong packages", importers)
	}
	t.Logf("the Prometheus client is imported by %s", strings.Join(importers, ", "))
}
