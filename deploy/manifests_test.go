package deploy

import (
	"bytes"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

const testToken = "dGVzdC10b2tlbi10aGF0LWlzLWxvbmctZW5vdWdoLWZvci1jcA=="

// cluster is every object of a deploy, decoded strictly into the API's
// own types: a field the API does not have is an error.
type cluster struct {
	namespaces   []corev1.Namespace
	secrets      []corev1.Secret
	configMaps   []corev1.ConfigMap
	services     []corev1.Service
	statefulSets []appsv1.StatefulSet
	claims       []corev1.PersistentVolumeClaim
	jobs         []batchv1.Job
	files        map[string][]byte // object kind/name -> the file it came from
}

func decode(t *testing.T, files []File) *cluster {
	t.Helper()
	c := &cluster{files: map[string][]byte{}}
	for _, f := range files {
		for _, doc := range bytes.Split(f.Data, []byte("\n---\n")) {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			var err error
			switch tm.APIVersion + "/" + tm.Kind {
			case "v1/Namespace":
				err = strictInto(doc, &c.namespaces)
			case "v1/Secret":
				err = strictInto(doc, &c.secrets)
			case "v1/ConfigMap":
				err = strictInto(doc, &c.configMaps)
			case "v1/Service":
				err = strictInto(doc, &c.services)
			case "apps/v1/StatefulSet":
				err = strictInto(doc, &c.statefulSets)
			case "v1/PersistentVolumeClaim":
				err = strictInto(doc, &c.claims)
			case "batch/v1/Job":
				err = strictInto(doc, &c.jobs)
			default:
				t.Fatalf("%s: unexpected kind %s %s", f.Name, tm.APIVersion, tm.Kind)
			}
			if err != nil {
				t.Fatalf("%s: %s does not decode strictly into the API type: %v\n%s", f.Name, tm.Kind, err, doc)
			}
			c.files[tm.Kind] = f.Data
		}
	}
	return c
}

// strictInto decodes as the API server does: field names case-sensitive,
// unknown and duplicate fields errors.
func strictInto[T any](doc []byte, into *[]T) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	var v T
	strict, err := kjson.UnmarshalStrict(j, &v)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return errors.Join(strict...)
	}
	*into = append(*into, v)
	return nil
}

// topologies under test: the defaults, the walkthrough's, and a large one
// with every option set.
func topologies() map[string]Topology {
	walk := Default()
	walk.Lanes = 2
	walk.Senders.CPUs, walk.Receivers.CPUs = 3, 3 // two threads or lanes and the I/O thread
	walk.SweepArgs = []string{"--threads", "2", "--bucket", "100", "--duration", "3s", "--warmup", "1s", "--clock", "--name", "walk"}
	big := Default()
	big.Name, big.Namespace, big.Image, big.PullPolicy = "nats-bench", "perf", "registry.example.com/cp:1.4", "Always"
	big.Senders = Role{Count: 4, CPUs: 4, Memory: "2Gi", NodeSelector: Labels{"pool": "load"}}
	big.Receivers = Role{Count: 2, CPUs: 8, Memory: "8Gi", NodeSelector: Labels{"pool": "load", "topology.kubernetes.io/zone": "eu-1a"}}
	big.Sweep.NodeSelector = Labels{"pool": "control"}
	big.AntiAffinity, big.HostNetwork, big.Hold = "preferred", true, 2*time.Hour
	big.SUTSelector = Labels{"app.kubernetes.io/name": "nats"}
	job := Default()
	job.Name = "ysb"
	job.JobInput, job.JobOutput = "kafka://kafka.streams.svc:9092/ads?group=ysb", "jetstream://nats.streams.svc:4222/ysb.out"
	job.SweepArgs = []string{"--scenario", "ad-event", "--schema", "window", "--expect-filter", "event_type == view"}
	return map[string]Topology{"default": Default(), "walkthrough": walk, "large": big, "job": job}
}

func TestManifestsAreValidAPIObjects(t *testing.T) {
	for name, topo := range topologies() {
		for _, handlers := range [][]byte{nil, []byte("channels: []\n")} {
			files, err := Render(topo, testToken, handlers)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			c := decode(t, files)
			if len(c.namespaces) != 1 || len(c.secrets) != 1 || len(c.services) != 2 || len(c.statefulSets) != 2 || len(c.jobs) != 1 || len(c.claims) != 1 {
				t.Fatalf("%s: objects %d ns, %d secrets, %d services, %d statefulsets, %d jobs, %d claims", name,
					len(c.namespaces), len(c.secrets), len(c.services), len(c.statefulSets), len(c.jobs), len(c.claims))
			}
			if (handlers != nil) != (len(c.configMaps) == 1) {
				t.Errorf("%s: %d ConfigMaps with handlers %v", name, len(c.configMaps), handlers != nil)
			}
			checkNames(t, name, c)
			checkServices(t, name, c)
			checkSecret(t, name, c, files)
			for _, f := range files {
				if f.Secret != (f.Name == "01-token-secret.yaml") || (f.Secret && f.Mode != 0o600) {
					t.Errorf("%s: %s: secret %v, mode %o; want only the Secret's file marked, mode 0600", name, f.Name, f.Secret, f.Mode)
				}
			}
			for _, p := range c.pods() {
				checkGuaranteed(t, name+"/"+p.name, p.spec)
			}
			checkAffinity(t, name, topo, c)
			checkJob(t, name, topo, c, handlers != nil)
		}
	}
}

// pod is a pod template of the deploy, by its owner's name.
type pod struct {
	name   string
	labels map[string]string
	spec   corev1.PodSpec
}

func (c *cluster) pods() []pod {
	var out []pod
	for _, s := range c.statefulSets {
		out = append(out, pod{s.Name, s.Spec.Template.Labels, s.Spec.Template.Spec})
	}
	for _, j := range c.jobs {
		out = append(out, pod{j.Name, j.Spec.Template.Labels, j.Spec.Template.Spec})
	}
	return out
}

func errs(t *testing.T, what string, l field.ErrorList) {
	t.Helper()
	for _, e := range l {
		t.Errorf("%s: %v", what, e)
	}
}

func checkNames(t *testing.T, name string, c *cluster) {
	ns := c.namespaces[0].Name
	for _, m := range validation.IsDNS1123Label(ns) {
		t.Errorf("%s: namespace %q: %s", name, ns, m)
	}
	metas := []metav1.ObjectMeta{c.secrets[0].ObjectMeta, c.jobs[0].ObjectMeta, c.claims[0].ObjectMeta}
	for _, s := range c.statefulSets {
		metas = append(metas, s.ObjectMeta)
		// a StatefulSet's pods are NAME-ORDINAL, and the pod name is also
		// a label value (statefulset.kubernetes.io/pod-name)
		for _, m := range validation.IsDNS1123Label(s.Name + "-" + "255") {
			t.Errorf("%s: pod names of %s: %s", name, s.Name, m)
		}
	}
	for _, s := range c.services {
		metas = append(metas, s.ObjectMeta)
		for _, m := range validation.IsDNS1035Label(s.Name) {
			t.Errorf("%s: Service %q: %s", name, s.Name, m)
		}
	}
	for _, m := range metas {
		for _, msg := range validation.IsDNS1123Subdomain(m.Name) {
			t.Errorf("%s: %q: %s", name, m.Name, msg)
		}
		if m.Namespace != ns {
			t.Errorf("%s: %s is in namespace %q, not %q", name, m.Name, m.Namespace, ns)
		}
		errs(t, name+"/"+m.Name+" labels", metavalidation.ValidateLabels(m.Labels, field.NewPath("metadata", "labels")))
	}
	for _, p := range c.pods() {
		errs(t, name+"/"+p.name+" pod labels", metavalidation.ValidateLabels(p.labels, field.NewPath("labels")))
		errs(t, name+"/"+p.name+" node selector", metavalidation.ValidateLabels(p.spec.NodeSelector, field.NewPath("nodeSelector")))
	}
}

// checkServices: each StatefulSet's selector matches its pods, names a
// headless Service whose selector matches the same pods and nothing of the
// other role, and every Service port is a container port of those pods.
func checkServices(t *testing.T, name string, c *cluster) {
	for _, s := range c.statefulSets {
		sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
		errs(t, name+"/"+s.Name+" selector", metavalidation.ValidateLabelSelector(s.Spec.Selector, metavalidation.LabelSelectorValidationOptions{}, field.NewPath("selector")))
		if err != nil || !sel.Matches(labels.Set(s.Spec.Template.Labels)) {
			t.Errorf("%s: StatefulSet %s's selector %v does not match its pods %v (%v)", name, s.Name, sel, s.Spec.Template.Labels, err)
		}
		if s.Spec.PodManagementPolicy != appsv1.ParallelPodManagement || s.Spec.Replicas == nil || *s.Spec.Replicas < 1 {
			t.Errorf("%s: StatefulSet %s: policy %q replicas %v", name, s.Name, s.Spec.PodManagementPolicy, s.Spec.Replicas)
		}
		svc := c.service(s.Spec.ServiceName)
		if svc == nil {
			t.Errorf("%s: StatefulSet %s names Service %q, which is not deployed", name, s.Name, s.Spec.ServiceName)
			continue
		}
		if svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.PublishNotReadyAddresses {
			t.Errorf("%s: Service %s is not headless over ready pods (clusterIP %q, publishNotReady %v)", name, svc.Name, svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
		}
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(s.Spec.Template.Labels)) {
			t.Errorf("%s: Service %s selects %v, not the pods of %s", name, svc.Name, svc.Spec.Selector, s.Name)
		}
		for _, other := range c.statefulSets {
			if other.Name != s.Name && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(other.Spec.Template.Labels)) {
				t.Errorf("%s: Service %s also selects the pods of %s", name, svc.Name, other.Name)
			}
		}
		checkPorts(t, name, svc, s.Spec.Template.Spec.Containers)
		for _, ctr := range s.Spec.Template.Spec.Containers {
			checkAgentArgs(t, name, ctr)
		}
	}
}

func (c *cluster) service(name string) *corev1.Service {
	for i := range c.services {
		if c.services[i].Name == name {
			return &c.services[i]
		}
	}
	return nil
}

func checkPorts(t *testing.T, name string, svc *corev1.Service, containers []corev1.Container) {
	protocols := map[corev1.Protocol]bool{}
	for _, sp := range svc.Spec.Ports {
		protocols[sp.Protocol] = true
		found := false
		for _, ctr := range containers {
			for _, cp := range ctr.Ports {
				for _, m := range validation.IsValidPortName(cp.Name) {
					t.Errorf("%s: container port %q: %s", name, cp.Name, m)
				}
				byName := sp.TargetPort.Type == 1 && sp.TargetPort.StrVal == cp.Name
				if byName && cp.Protocol == sp.Protocol && cp.ContainerPort == sp.Port {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("%s: Service %s port %s (%d/%s) matches no container port", name, svc.Name, sp.Name, sp.Port, sp.Protocol)
		}
	}
	if !protocols[corev1.ProtocolUDP] || !protocols[corev1.ProtocolTCP] {
		t.Errorf("%s: Service %s declares %v: want the control port (TCP) and the TSC probes (UDP)", name, svc.Name, protocols)
	}
}
