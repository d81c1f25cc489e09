package deploy

import (
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/cloudprofiler-go/cp/internal/httpapi"
)

// File is one manifest file: kubectl apply -f DIR applies them in name
// order (the Namespace first).
type File struct {
	Name string
	Mode uint32 // the Secret's file is 0600
	Data []byte
	// Secret marks the file that holds the token: it is written apart from
	// the others, outside the working tree by default (cpsweep deploy's
	// --secret-out), so that no "git add ." commits a token.
	Secret bool
}

// Where the pods find what the manifests mount.
const (
	tokenDir    = "/etc/cp/token"
	TokenPath   = tokenDir + "/token"
	handlersDir = "/etc/cp/handlers"
	RunsDir     = "/runs"
	// agentUser runs every container: no root, the image's files are
	// readable by anyone and the Secret's group is this one (fsGroup).
	agentUser = 65532
)

// Render writes the manifests of t. token is the agents' shared secret
// (it appears only in the Secret); handlers is the profiler's handlers
// file (nil: no ConfigMap, no profiled trial).
func Render(t Topology, token string, handlers []byte) ([]File, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if err := httpapi.CheckToken(token); err != nil || token == "" {
		return nil, fmt.Errorf("the agents' token: %v (%s)", err, httpapi.TokenHint)
	}
	for _, a := range t.SweepArgs {
		if strings.Contains(a, token) {
			return nil, fmt.Errorf("a sweep argument holds the token: it goes in the Secret only, never in an argument")
		}
	}
	r := renderer{t: t}
	var files []File
	add := func(name string, mode uint32, objs ...any) error {
		var b strings.Builder
		b.WriteString("# written by cpsweep deploy kubernetes; kubectl apply -f applies the files in name order\n")
		for i, o := range objs {
			y, err := yaml.Marshal(o)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if i > 0 {
				b.WriteString("---\n")
			}
			b.Write(y)
		}
		files = append(files, File{Name: name, Mode: mode, Data: []byte(b.String()), Secret: mode == 0o600})
		return nil
	}
	errs := []error{
		add("00-namespace.yaml", 0o644, r.namespace()),
		add("01-token-secret.yaml", 0o600, r.secret(token)),
	}
	if handlers != nil {
		errs = append(errs, add("02-handlers.yaml", 0o644, r.handlers(handlers)))
	}
	errs = append(errs,
		add("10-senders.yaml", 0o644, r.service(roleSender), r.statefulSet(roleSender)),
		add("11-receivers.yaml", 0o644, r.service(roleReceiver), r.statefulSet(roleReceiver)),
		add("20-sweep.yaml", 0o644, r.runsClaim(), r.job(handlers != nil)))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return files, nil
}

type role string

const (
	roleSender   role = "sender"
	roleReceiver role = "receiver"
	roleSweep    role = "sweep"
)

type renderer struct{ t Topology }

func (r renderer) name(suffix string) string { return r.t.Name + "-" + suffix }

// labels of a role's pods; selectors use all of them but the version.
func (r renderer) labels(ro role) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "cloudprofiler",
		"app.kubernetes.io/instance":   r.t.Name,
		"app.kubernetes.io/component":  string(ro),
		"app.kubernetes.io/managed-by": "cpsweep",
	}
}

func (r renderer) selector(ro role) map[string]string {
	l := r.labels(ro)
	delete(l, "app.kubernetes.io/managed-by")
	return l
}

func (r renderer) meta(name string, ro role) objectMeta {
	m := objectMeta{Name: name, Namespace: r.t.Namespace, Labels: r.labels(ro)}
	if ro == "" {
		m.Labels = map[string]string{"app.kubernetes.io/name": "cloudprofiler", "app.kubernetes.io/instance": r.t.Name, "app.kubernetes.io/managed-by": "cpsweep"}
	}
	return m
}

func (r renderer) namespace() namespace {
	m := r.meta(r.t.Namespace, "")
	m.Namespace = ""
	return namespace{typeMeta{"v1", "Namespace"}, m}
}

func (r renderer) secret(token string) secret {
	return secret{typeMeta{"v1", "Secret"}, r.meta(r.name("token"), ""), "Opaque", map[string][]byte{"token": []byte(token + "\n")}}
}

func (r renderer) handlers(b []byte) configMap {
	return configMap{typeMeta{"v1", "ConfigMap"}, r.meta(r.name("handlers"), ""), map[string]string{"handlers.yaml": string(b)}}
}

// port is the agent's control port of a role.
func port(ro role) int {
	if ro == roleReceiver {
		return ReceiverPort
	}
	return SenderPort
}

// servicePorts are the ports a role's pods serve: control (and /metrics)
// on TCP, the TSC probes on UDP (cpsweep --clock probes pod to pod), and
// the receivers' data port.
// servicePorts are a role's ports; a receiver's data port only when the
// senders send to it (not behind a job: it reads the job's output).
func (r renderer) servicePorts(ro role) []servicePort {
	p := []servicePort{
		{Name: "control", Protocol: "TCP", Port: port(ro), TargetPort: "control"},
		{Name: "tsc-probe", Protocol: "UDP", Port: port(ro), TargetPort: "tsc-probe"},
	}
	if ro == roleReceiver && r.t.JobOutput == "" {
		p = append(p, servicePort{Name: "data", Protocol: "TCP", Port: DataPort, TargetPort: "data"})
	}
	return p
}

func (r renderer) service(ro role) service {
	return service{typeMeta{"v1", "Service"}, r.meta(r.name(string(ro)), ro), serviceSpec{ClusterIP: "None", Selector: r.selector(ro), Ports: r.servicePorts(ro)}}
}

// fqdn is a role's headless Service name as the cluster's DNS serves it.
func (r renderer) fqdn(ro role) string {
	return fmt.Sprintf("%s.%s.svc.%s", r.name(string(ro)), r.t.Namespace, r.t.ClusterDomain)
}

func (r renderer) roleOf(ro role) Role {
	switch ro {
	case roleSender:
		return r.t.Senders
	case roleReceiver:
		return r.t.Receivers
	}
	return r.t.Sweep
}

// guaranteed is requests = limits in whole CPUs: the Guaranteed QoS class,
// which the kubelet's static CPU manager gives exclusive CPUs.
func guaranteed(ro Role) resources {
	q := map[string]string{"cpu": strconv.Itoa(ro.CPUs), "memory": ro.Memory}
	return resources{Requests: q, Limits: maps.Clone(q)}
}

func (r renderer) agentArgs(ro role) []string {
	addr := ":" + strconv.Itoa(port(ro))
	if ro == roleReceiver && r.t.JobOutput != "" {
		return []string{"--agent", "--connect", r.t.jobOutputInGroup(), "--job-input", r.t.JobInput, "--metrics-addr", addr, "--token-file", TokenPath}
	}
	if ro == roleReceiver {
		return []string{"--agent", "--bind", fmt.Sprintf("tcp://*:%d", DataPort), "--lanes", strconv.Itoa(r.t.Lanes), "--metrics-addr", addr, "--token-file", TokenPath}
	}
	return []string{"--agent", "--metrics-addr", addr, "--token-file", TokenPath}
}

func (r renderer) containerPorts(ro role) []containerPort {
	var out []containerPort
	for _, p := range r.servicePorts(ro) {
		out = append(out, containerPort{Name: p.TargetPort, ContainerPort: p.Port, Protocol: p.Protocol})
	}
	return out
}
