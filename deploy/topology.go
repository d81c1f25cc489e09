package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cloudprofiler-go/cp/driver"

	"gopkg.in/yaml.v3"
)

// Topology is what a sweep on a cluster is made of: flags of cpsweep
// deploy kubernetes, or a small YAML file with the same fields.
type Topology struct {
	Name          string        `yaml:"name"`           // prefix of every object's name
	Namespace     string        `yaml:"namespace"`      // created by the manifests
	Image         string        `yaml:"image"`          // holds dgsend, dgrecv and cpsweep
	PullPolicy    string        `yaml:"pull_policy"`    // IfNotPresent, Always or Never
	ClusterDomain string        `yaml:"cluster_domain"` // for the Services' FQDNs
	Senders       Role          `yaml:"senders"`
	Receivers     Role          `yaml:"receivers"`
	Sweep         Role          `yaml:"sweep"` // the Job's pod (count is 1)
	Lanes         int           `yaml:"lanes"` // per receiver agent
	AntiAffinity  string        `yaml:"anti_affinity"`
	SUTSelector   Labels        `yaml:"sut_selector"` // the system under test's pods, in any namespace
	HostNetwork   bool          `yaml:"host_network"`
	RunsSize      string        `yaml:"runs_size"` // the run directory's volume
	Hold          time.Duration `yaml:"hold"`      // the Job's pod waits this long after the sweep, for kubectl cp
	SweepArgs     []string      `yaml:"sweep_args"`
	// JobInput and JobOutput put a stream processor between two topics in
	// the path (cpsweep --input/--output, docs/sut.md): the receiver reads
	// its output and the job's lag on its input, and the sweep is given
	// both. Empty: no job.
	JobInput  string `yaml:"job_input"`
	JobOutput string `yaml:"job_output"`
}

// Role is one kind of pod: how many, how big, where.
type Role struct {
	Count        int    `yaml:"count"`
	CPUs         int    `yaml:"cpus"`   // whole CPUs: requests = limits, Guaranteed QoS
	Memory       string `yaml:"memory"` // a quantity: 512Mi, 2Gi
	NodeSelector Labels `yaml:"node_selector"`
}

// Labels is a label set, written k=v,k2=v2 on the command line.
type Labels map[string]string

// ParseLabels reads k=v,k2=v2 ("" is no labels).
func ParseLabels(s string) (Labels, error) {
	l := Labels{}
	if s == "" {
		return l, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q: want key=value", kv)
		}
		l[k] = v
	}
	return l, nil
}

// Set makes Labels a flag value (k=v,k2=v2).
func (l *Labels) Set(s string) error {
	p, err := ParseLabels(s)
	if err != nil {
		return err
	}
	*l = p
	return nil
}

// Type names the flag value in --help.
func (l *Labels) Type() string { return "k=v,..." }

func (l Labels) String() string {
	var parts []string
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// Ports the agents listen on: the control API (also /metrics) on TCP and
// the TSC probes on UDP share a number, as the agents default to.
const (
	SenderPort   = 9101
	ReceiverPort = 9102
	DataPort     = 5555
)

// DefaultImage is the image the manifests and the Helm chart run unless
// told otherwise: the name make image gives what it builds.
const DefaultImage = "cloudprofiler-go/cp:latest"

// Default is the topology of the flags' defaults.
func Default() Topology {
	return Topology{
		Name: "cp", Namespace: "cp", Image: DefaultImage, PullPolicy: "IfNotPresent", ClusterDomain: "cluster.local",
		Senders:   Role{Count: 1, CPUs: 2, Memory: "1Gi"},
		Receivers: Role{Count: 1, CPUs: 2, Memory: "2Gi"},
		Sweep:     Role{Count: 1, CPUs: 1, Memory: "512Mi"},
		Lanes:     1, AntiAffinity: "required", RunsSize: "1Gi", Hold: 30 * time.Minute,
	}
}

// ParseTopology reads a topology file over the defaults; an unknown field
// is an error (a typo would otherwise deploy the default silently).
func ParseTopology(b []byte) (Topology, error) {
	t := Default()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&t); err != nil {
		return Topology{}, fmt.Errorf("topology: %w", err)
	}
	// A second document would be ignored silently, unknown fields and all:
	// one topology is one document.
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return Topology{}, fmt.Errorf("topology: after the first document: %w", err)
	default:
		return Topology{}, fmt.Errorf("topology: a second YAML document (line %d): a topology file holds one; give each topology its own file", more.Line)
	}
	return t, nil
}

var (
	dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	quantity     = regexp.MustCompile(`^[1-9][0-9]*(Ki|Mi|Gi|Ti|k|M|G|T)?$`)
	labelKey     = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelValue   = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
)

// Validate lists every problem at once, before anything is written.
func (t Topology) Validate() error {
	var p []string
	add := func(format string, a ...any) { p = append(p, fmt.Sprintf(format, a...)) }
	// The longest derived name is NAME-receiver-NNN (pod names of the
	// StatefulSet); labels and Service names are DNS-1123 labels.
	if !dns1123Label.MatchString(t.Name) || len(t.Name) > 30 {
		add("name %q: lower-case letters, digits and '-', at most 30 characters", t.Name)
	}
	if !dns1123Label.MatchString(t.Namespace) || len(t.Namespace) > 63 {
		add("namespace %q: lower-case letters, digits and '-', at most 63 characters", t.Namespace)
	}
	if t.Image == "" || strings.ContainsAny(t.Image, " \t\n") {
		add("image %q: give the image that holds dgsend, dgrecv and cpsweep (make image)", t.Image)
	}
	if !slices.Contains([]string{"IfNotPresent", "Always", "Never"}, t.PullPolicy) {
		add("pull policy %q: IfNotPresent, Always or Never", t.PullPolicy)
	}
	for _, label := range strings.Split(t.ClusterDomain, ".") {
		if !dns1123Label.MatchString(label) {
			add("cluster domain %q is not a DNS name", t.ClusterDomain)
			break
		}
	}
	for _, r := range []struct {
		name string
		role Role
		max  int
	}{{"senders", t.Senders, 256}, {"receivers", t.Receivers, 256}, {"sweep", t.Sweep, 1}} {
		if r.role.Count < 1 || r.role.Count > r.max {
			add("%s: count %d, want 1..%d", r.name, r.role.Count, r.max)
		}
		if r.role.CPUs < 1 || r.role.CPUs > 256 {
			add("%s: cpus %d, want a whole number of CPUs, 1..256 (Guaranteed QoS with the static CPU manager pins whole CPUs)", r.name, r.role.CPUs)
		}
		if !quantity.MatchString(r.role.Memory) {
			add("%s: memory %q, want a quantity like 512Mi or 2Gi", r.name, r.role.Memory)
		}
		p = append(p, checkLabels(r.name+" node selector", r.role.NodeSelector)...)
	}
	if t.Lanes < 1 || t.Lanes > 64 {
		add("lanes %d, want 1..64", t.Lanes)
	}
	if t.AntiAffinity != "required" && t.AntiAffinity != "preferred" {
		add("anti-affinity %q: required or preferred", t.AntiAffinity)
	}
	p = append(p, checkLabels("system-under-test selector", t.SUTSelector)...)
	if !quantity.MatchString(t.RunsSize) {
		add("runs size %q, want a quantity like 1Gi", t.RunsSize)
	}
	if t.Hold < 0 || t.Hold > 7*24*time.Hour {
		add("hold %v, want 0..168h", t.Hold)
	}
	p = append(p, t.jobProblems()...)
	if len(p) > 0 {
		return errors.New("invalid topology: " + strings.Join(p, "; "))
	}
	return nil
}

func checkLabels(what string, l Labels) []string {
	var p []string
	for k, v := range l {
		if !labelKey.MatchString(k) || len(k) > 253 {
			p = append(p, fmt.Sprintf("%s: %q is not a label key", what, k))
		}
		if !labelValue.MatchString(v) {
			p = append(p, fmt.Sprintf("%s: %q is not a label value (at most 63 letters, digits, '-', '_', '.')", what, v))
		}
	}
	return p
}

// SizeWarnings says where a pod has fewer CPUs than the threads it will
// run busy: each emission thread (or lane) wants a CPU of its own, and
// the control API, libzmq's I/O thread and the consumer want one more.
func SizeWarnings(t Topology, threads int) []string {
	var w []string
	if threads+1 > t.Senders.CPUs {
		w = append(w, fmt.Sprintf("sender pods have %d CPUs for %d emission threads (--threads) and the I/O thread: give --sender-cpus %d, or the threads will share CPUs and the answer will measure that", t.Senders.CPUs, threads, threads+1))
	}
	if t.Lanes+1 > t.Receivers.CPUs {
		w = append(w, fmt.Sprintf("receiver pods have %d CPUs for %d lanes and the consumer: give --receiver-cpus %d", t.Receivers.CPUs, t.Lanes, t.Lanes+1))
	}
	return w
}

// jobProblems checks a job in the path: both topics, broker URLs, the
// input naming the job's group, and one receiver with one lane (the job's
// output is one stream, read whole by one consumer).
func (t Topology) jobProblems() []string {
	if t.JobInput == "" && t.JobOutput == "" {
		return nil
	}
	var p []string
	if t.JobInput == "" || t.JobOutput == "" {
		return []string{"a job in the path needs both its input (job input, naming its group) and its output"}
	}
	if e, err := driver.Parse(t.JobInput); err != nil {
		p = append(p, fmt.Sprintf("job input: %v", err))
	} else if e.Group == "" {
		p = append(p, fmt.Sprintf("job input %s: name the job's consumer group (?group=NAME): its lag is the job's backlog", t.JobInput))
	}
	if _, err := driver.Parse(t.JobOutput); err != nil {
		p = append(p, fmt.Sprintf("job output: %v", err))
	}
	if t.Receivers.Count != 1 || t.Lanes != 1 {
		p = append(p, fmt.Sprintf("a job in the path: one receiver with one lane reads its output whole (got %d receivers, %d lanes)", t.Receivers.Count, t.Lanes))
	}
	return p
}

// jobOutputInGroup is the job's output as the receiver reads it.
func (t Topology) jobOutputInGroup() string {
	return driver.InGroup(t.JobOutput, driver.JobOutputGroup)
}
