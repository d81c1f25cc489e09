package deploy

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/yaml"

	"github.com/cloudprofiler-go/cp/internal/redact"
)

const chartDir = "helm/cloudprofiler"

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load the chart: %v", err)
	}
	return ch
}

// renderChart renders the chart as helm install RELEASE -n NAMESPACE
// would, strictly (a value a template names but the chart lacks is an
// error), and returns one File per template, named as the template.
func renderChart(t *testing.T, ch *chart.Chart, release, namespace string, vals map[string]any, cluster engine.ClientProvider) ([]File, error) {
	t.Helper()
	v, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true, Revision: 1}, nil)
	if err != nil {
		return nil, err
	}
	var out map[string]string
	if cluster != nil {
		out, err = engine.RenderWithClientProvider(ch, v, cluster)
	} else {
		out, err = engine.Engine{Strict: true}.Render(ch, v)
	}
	if err != nil {
		return nil, err
	}
	separator := regexp.MustCompile(`(?m)^---\s*$`)
	var files []File
	for name, text := range out {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		var docs []string
		for _, d := range separator.Split(text, -1) {
			if strings.TrimSpace(d) != "" {
				docs = append(docs, strings.Trim(d, "\n"))
			}
		}
		if len(docs) > 0 {
			files = append(files, File{Name: path.Base(name), Data: []byte(strings.Join(docs, "\n---\n") + "\n")})
		}
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return files, nil
}

// chartValues are the values that stand for a topology: the mapping a
// user follows from cpsweep deploy kubernetes's flags to the chart.
func chartValues(topo Topology, token string, handlers []byte) map[string]any {
	repo, tag := topo.Image, "latest"
	if i := strings.LastIndex(topo.Image, ":"); i > strings.LastIndex(topo.Image, "/") {
		repo, tag = topo.Image[:i], topo.Image[i+1:]
	}
	agents := func(r Role) map[string]any {
		return map[string]any{"count": r.Count, "cpus": r.CPUs, "memory": r.Memory, "nodeSelector": labelValues(r.NodeSelector)}
	}
	args := []any{}
	for _, a := range topo.SweepArgs {
		args = append(args, a)
	}
	return map[string]any{
		"image":         map[string]any{"repository": repo, "tag": tag, "pullPolicy": topo.PullPolicy},
		"clusterDomain": topo.ClusterDomain,
		"token":         token,
		"senders":       agents(topo.Senders),
		"receivers":     agents(topo.Receivers),
		"lanes":         topo.Lanes,
		"antiAffinity":  topo.AntiAffinity,
		"sutSelector":   labelValues(topo.SUTSelector),
		"hostNetwork":   topo.HostNetwork,
		"sweep": map[string]any{"cpus": topo.Sweep.CPUs, "memory": topo.Sweep.Memory, "nodeSelector": labelValues(topo.Sweep.NodeSelector),
			"runsSize": topo.RunsSize, "holdSeconds": int(topo.Hold.Seconds()), "args": args},
		"profile": map[string]any{"handlers": string(handlers)},
		"job":     map[string]any{"input": topo.JobInput, "output": topo.JobOutput},
	}
}

func labelValues(l Labels) map[string]any {
	out := map[string]any{}
	for k, v := range l {
		out[k] = v
	}
	return out
}

// withoutManager drops the one label that differs by design (Helm, not
// cpsweep, manages the chart's objects) from every object and pod template.
func withoutManager(c *cluster) {
	metas := []*metav1.ObjectMeta{}
	for i := range c.secrets {
		metas = append(metas, &c.secrets[i].ObjectMeta)
	}
	for i := range c.configMaps {
		metas = append(metas, &c.configMaps[i].ObjectMeta)
	}
	for i := range c.services {
		metas = append(metas, &c.services[i].ObjectMeta)
	}
	for i := range c.statefulSets {
		metas = append(metas, &c.statefulSets[i].ObjectMeta, &c.statefulSets[i].Spec.Template.ObjectMeta)
	}
	for i := range c.claims {
		metas = append(metas, &c.claims[i].ObjectMeta)
	}
	for i := range c.jobs {
		metas = append(metas, &c.jobs[i].ObjectMeta, &c.jobs[i].Spec.Template.ObjectMeta)
	}
	for _, m := range metas {
		delete(m.Labels, "app.kubernetes.io/managed-by")
	}
}

// TestChartRendersTheManifestsObjects: for every topology under test, the
// chart (release NAME in namespace NS, the topology's values) renders the
// same objects as cpsweep deploy kubernetes, field for field in the API's
// types, but the Namespace (helm install --create-namespace makes it) and
// the managed-by label; and the chart's defaults are the command's.
func TestChartRendersTheManifestsObjects(t *testing.T) {
	ch := loadChart(t)
	cases := map[string]map[string]any{}
	tops := topologies()
	for name, topo := range tops {
		cases[name] = chartValues(topo, testToken, nil)
		cases[name+"+profile"] = chartValues(topo, testToken, []byte("channels: []\n# a comment: {{ not a template }}\n"))
	}
	cases["chart defaults"] = map[string]any{"token": testToken}
	tops["chart defaults"] = Default()
	for name, vals := range cases {
		topo := tops[strings.TrimSuffix(name, "+profile")]
		var handlers []byte
		if h := vals["profile"]; h != nil && h.(map[string]any)["handlers"] != "" {
			handlers = []byte(h.(map[string]any)["handlers"].(string))
		}
		want, err := Render(topo, testToken, handlers)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		files, err := renderChart(t, ch, topo.Name, topo.Namespace, vals, nil)
		if err != nil {
			t.Fatalf("%s: the chart: %v", name, err)
		}
		c, w := decode(t, files), decode(t, want)
		if len(c.namespaces) != 0 {
			t.Errorf("%s: the chart makes a Namespace; helm install --create-namespace owns it", name)
		}
		if c.jobs[0].Labels["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("%s: the Job's managed-by label is %q, want Helm", name, c.jobs[0].Labels["app.kubernetes.io/managed-by"])
		}
		checkServices(t, name, c)
		checkSecret(t, name, c, files)
		for _, p := range c.pods() {
			checkGuaranteed(t, name+"/"+p.name, p.spec)
		}
		checkAffinity(t, name, topo, c)
		checkJob(t, name, topo, c, handlers != nil)
		withoutManager(c)
		withoutManager(w)
		sameObjects(t, name, "Secret", c.secrets, w.secrets)
		sameObjects(t, name, "ConfigMap", c.configMaps, w.configMaps)
		sameObjects(t, name, "Service", c.services, w.services)
		sameObjects(t, name, "StatefulSet", c.statefulSets, w.statefulSets)
		sameObjects(t, name, "PersistentVolumeClaim", c.claims, w.claims)
		sameObjects(t, name, "Job", c.jobs, w.jobs)
	}
}

func sameObjects[T any](t *testing.T, name, kind string, chart, manifests []T) {
	t.Helper()
	if len(chart) != len(manifests) {
		t.Errorf("%s: the chart has %d %s, the manifests %d", name, len(chart), kind, len(manifests))
		return
	}
	for i := range chart {
		if !equality.Semantic.DeepEqual(chart[i], manifests[i]) {
			g, _ := json.MarshalIndent(chart[i], "", " ")
			m, _ := json.MarshalIndent(manifests[i], "", " ")
			t.Errorf("%s: the chart's %s differs from the manifests' (want the manifests'): %s", name, kind, firstDifference(string(m), string(g)))
		}
	}
}

// secretToken is the token in the Secret the chart renders.
func secretToken(t *testing.T, files []File) string {
	t.Helper()
	c := decode(t, files)
	if len(c.secrets) != 1 {
		t.Fatalf("%d Secrets, want 1", len(c.secrets))
	}
	return string(c.secrets[0].Data["token"])
}

// fakeCluster answers the chart's lookup from a fake API server holding
// the given objects.
type fakeCluster struct{ client dynamic.Interface }

func (f fakeCluster) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, err
	}
	return f.client.Resource(gv.WithResource(strings.ToLower(kind) + "s")), true, nil
}

// TestChartMakesAndKeepsAToken: without a token the chart makes a random
// one of 32 bytes (a new one per install), keeps the one the release's
// Secret already holds on upgrade, and with existingSecret renders no
// Secret and mounts the one named.
func TestChartMakesAndKeepsAToken(t *testing.T) {
	ch := loadChart(t)
	var made []string
	for range 2 {
		files, err := renderChart(t, ch, "cp", "cp", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		tok := strings.TrimSuffix(secretToken(t, files), "\n")
		raw, err := base64.StdEncoding.DecodeString(tok)
		if err != nil || len(raw) != 32 {
			t.Fatalf("the made token %q is not 32 random bytes in base64 (%v)", tok, err)
		}
		made = append(made, tok)
	}
	if made[0] == made[1] {
		t.Errorf("two installs made the same token %q", made[0])
	}

	kept := "a-token-this-release-already-has-0123456789"
	existing := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "cp-token", "namespace": "cp"},
		"data":     map[string]any{"token": base64.StdEncoding.EncodeToString([]byte(kept + "\n"))},
	}}
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), existing)
	files, err := renderChart(t, ch, "cp", "cp", nil, fakeCluster{client})
	if err != nil {
		t.Fatal(err)
	}
	if got := secretToken(t, files); got != kept+"\n" {
		t.Errorf("on upgrade the token became %q, want the release's %q kept", got, kept)
	}

	files, err = renderChart(t, ch, "cp", "cp", map[string]any{"existingSecret": "team-token"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := decode(t, files)
	if len(c.secrets) != 0 {
		t.Errorf("with existingSecret the chart still renders %d Secrets", len(c.secrets))
	}
	for _, p := range c.pods() {
		if !slices.ContainsFunc(p.spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "team-token" }) {
			t.Errorf("pod of %s does not mount the Secret team-token", p.name)
		}
	}
}

// TestChartRefusesBadValues: what cpsweep deploy kubernetes refuses, the
// chart refuses too, before anything is applied, with the value named.
func TestChartRefusesBadValues(t *testing.T) {
	ch := loadChart(t)
	cases := []struct {
		name    string
		release string
		vals    map[string]any
		want    string
	}{
		{"a fraction of a CPU", "cp", map[string]any{"senders": map[string]any{"cpus": 1.5}}, "senders/cpus"},
		{"no CPUs", "cp", map[string]any{"receivers": map[string]any{"cpus": 0}}, "receivers/cpus"},
		{"no agents", "cp", map[string]any{"senders": map[string]any{"count": 0}}, "senders/count"},
		{"a memory that is no quantity", "cp", map[string]any{"sweep": map[string]any{"memory": "lots"}}, "sweep/memory"},
		{"a pull policy", "cp", map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}, "pullPolicy"},
		{"an anti-affinity", "cp", map[string]any{"antiAffinity": "maybe"}, "antiAffinity"},
		{"a typo", "cp", map[string]any{"sender": map[string]any{"count": 2}}, "sender"},
		{"a short token", "cp", map[string]any{"token": "short"}, "token"},
		{"a label value", "cp", map[string]any{"sutSelector": map[string]any{"app": "not a label"}}, "sutSelector"},
		{"lanes", "cp", map[string]any{"lanes": 65}, "lanes"},
		{"a flag the chart sets", "cp", map[string]any{"sweep": map[string]any{"args": []any{"--duration", "3s", "--results=/tmp"}}}, "--results is set by the chart"},
		{"the token in an argument", "cp", map[string]any{"token": testToken, "sweep": map[string]any{"args": []any{"--name", "x" + testToken}}}, "holds the token"},
		{"a job's input without its group", "cp", map[string]any{"job": map[string]any{"input": "kafka://k:9092/ads", "output": "kafka://k:9092/out"}}, "job/input"},
		{"a job's input without its output", "cp", map[string]any{"job": map[string]any{"input": "kafka://k:9092/ads?group=ysb"}}, "give both input"},
		{"a job read by two receivers", "cp", map[string]any{"receivers": map[string]any{"count": 2}, "job": map[string]any{"input": "kafka://k:9092/ads?group=ysb", "output": "kafka://k:9092/out"}}, "one receiver with one lane"},
		{"the job's topics in sweep.args", "cp", map[string]any{"sweep": map[string]any{"args": []any{"--input", "kafka://k:9092/ads?group=ysb"}}}, "--input is set by the chart"},
		{"a password in the job's input", "cp", map[string]any{"job": map[string]any{"input": "jetstream://user:pw@n:4222/ads?group=ysb", "output": "jetstream://n:4222/out"}}, "job/input"},
		{"a password parameter in the job's output", "cp", map[string]any{"job": map[string]any{"input": "redis://r:6379/ads?group=ysb", "output": "redis://r:6379/out?password=pw"}}, "job/output"},
		{"credentials in --sut", "cp", map[string]any{"sweep": map[string]any{"args": []any{"--sut", "nats://u:pw@n:4222/x"}}}, "sweep/args/1"},
		{"credentials in --job-metrics=", "cp", map[string]any{"sweep": map[string]any{"args": []any{"--job-metrics=http://u:pw@job:9090/metrics"}}}, "sweep/args/0"},
		{"a token parameter in an argument", "cp", map[string]any{"sweep": map[string]any{"args": []any{"--job-metrics", "http://job:9090/metrics?Auth_Token=x"}}}, "sweep/args/1"},
		{"a long release name", strings.Repeat("a", 31), nil, "at most 30 characters"},
		{"an upper-case release name", "Bench", nil, "lower-case"},
	}
	for _, tc := range cases {
		_, err := renderChart(t, ch, tc.release, "cp", tc.vals, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}

// TestChartLints: helm lint finds nothing worse than information.
func TestChartLints(t *testing.T) {
	l := lint.All(chartDir, map[string]any{"token": testToken}, "cp", false)
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("helm lint: %v", m)
		}
	}
}

// TestChartCredentialRuleIsTheCommands: the chart's schema refuses a
// value for credentials exactly when cpsweep's own check does.
func TestChartCredentialRuleIsTheCommands(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sch struct {
		Definitions map[string]struct {
			Not struct{ Pattern string } `json:"not"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &sch); err != nil {
		t.Fatal(err)
	}
	rule := regexp.MustCompile(sch.Definitions["noCredentials"].Not.Pattern)
	for _, v := range []string{
		"nats://u:pw@n:4222/x", "nats://token@n:4222/x", "http://job:9090/metrics", "kafka://k:9092/t?group=g",
		"redis://r:6379/k?password=x", "redis://r/k?group=g&sasl_password=x", "http://j/m?Auth_Token=x", "http://j/m?PASSWD=x",
		"--sut=jetstream://a:b@n/x", "plain words", "mail me@home", "http://j/m?passage=1", "--duration", "user@host:/path",
	} {
		if got, want := rule.MatchString(v), redact.Credentials(v); got != want {
			t.Errorf("%q: the chart refuses it %v, the command %v", v, got, want)
		}
	}
}

// TestOneImageName: make image builds the image the manifests and the
// chart run by default (they once named two different ones).
func TestOneImageName(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^IMAGE \?= (\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile sets no IMAGE ?= default")
	}
	values, err := os.ReadFile("helm/cloudprofiler/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Image struct{ Repository, Tag string } `json:"image"`
	}
	if err := yaml.Unmarshal(values, &v); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../scripts/image-from-host.sh")
	if err != nil {
		t.Fatal(err)
	}
	for what, name := range map[string]string{
		"make image":         string(m[1]),
		"the chart's values": v.Image.Repository + ":" + v.Image.Tag,
		"image-from-host.sh": regexp.MustCompile(`tag=\$\{1:-(\S+)\}`).FindStringSubmatch(string(script))[1],
		"deploy's default":   Default().Image,
	} {
		if name != DefaultImage {
			t.Errorf("%s names %s, not %s", what, name, DefaultImage)
		}
	}
}
