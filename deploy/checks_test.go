package deploy

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// checkSecret: the token is in the Secret and nowhere else (no argument,
// environment variable, ConfigMap or other file); every pod mounts the
// Secret and passes its path, not its value.
func checkSecret(t *testing.T, name string, c *cluster, files []File) {
	s := c.secrets[0]
	if strings.TrimSpace(string(s.Data["token"])) != testToken {
		t.Errorf("%s: the Secret holds %q, not the token", name, s.Data["token"])
	}
	for _, f := range files {
		if bytes.Equal(f.Data, c.files["Secret"]) { // the Secret's own file
			continue
		}
		if strings.Contains(string(f.Data), testToken) {
			t.Errorf("%s: %s echoes the token", name, f.Name)
		}
	}
	for _, p := range c.pods() {
		var vol string
		for _, v := range p.spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == s.Name {
				vol = v.Name
			}
		}
		if vol == "" {
			t.Errorf("%s: pod of %s does not mount the Secret %s", name, p.name, s.Name)
			continue
		}
		for _, ctr := range p.spec.Containers {
			mounted := slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == vol && m.ReadOnly && strings.HasPrefix(TokenPath, m.MountPath+"/")
			})
			args := strings.Join(append(append([]string{}, ctr.Command...), ctr.Args...), " ")
			if !mounted || !strings.Contains(args, "--token-file "+TokenPath) || strings.Contains(args, "--token ") {
				t.Errorf("%s: container %s of %s: token mounted %v, args %q", name, ctr.Name, p.name, mounted, args)
			}
			if len(ctr.EnvFrom) > 0 || slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.ValueFrom != nil }) {
				t.Errorf("%s: container %s of %s takes environment from a Secret", name, ctr.Name, p.name)
			}
		}
	}
}

// checkGuaranteed: the QoS class is Guaranteed (every container requests
// exactly its limits of CPU and memory) and the CPUs are whole, so that
// the static CPU manager gives the pod exclusive CPUs.
func checkGuaranteed(t *testing.T, name string, spec corev1.PodSpec) {
	for _, ctr := range spec.Containers {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, okReq := ctr.Resources.Requests[r]
			lim, okLim := ctr.Resources.Limits[r]
			if !okReq || !okLim || req.Cmp(lim) != 0 || req.Sign() <= 0 {
				t.Errorf("%s: container %s %s requests %v limits %v: not Guaranteed", name, ctr.Name, r, req.String(), lim.String())
			}
		}
		cpu := ctr.Resources.Limits[corev1.ResourceCPU]
		if cpu.MilliValue()%1000 != 0 {
			t.Errorf("%s: container %s has %s CPUs: the static CPU manager pins whole CPUs only", name, ctr.Name, cpu.String())
		}
		if sc := ctr.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: container %s may escalate privileges", name, ctr.Name)
		}
	}
	if len(spec.InitContainers) > 0 {
		t.Errorf("%s: init containers would need Guaranteed resources too", name)
	}
}

// checkAffinity: a sender pod may not land beside a receiver or the
// system under test (required, unless preferred was asked for), and the
// terms select exactly those pods.
func checkAffinity(t *testing.T, name string, topo Topology, c *cluster) {
	podLabels := map[string]map[string]string{}
	for _, p := range c.pods() {
		podLabels[p.labels["app.kubernetes.io/component"]] = p.labels
	}
	sut := map[string]string(topo.SUTSelector)
	for _, s := range c.statefulSets {
		me := s.Spec.Template.Labels["app.kubernetes.io/component"]
		other := map[string]string{"sender": "receiver", "receiver": "sender"}[me]
		aa := s.Spec.Template.Spec.Affinity.PodAntiAffinity
		var terms []corev1.PodAffinityTerm
		if topo.AntiAffinity == "required" {
			terms = aa.RequiredDuringSchedulingIgnoredDuringExecution
		} else {
			for _, w := range aa.PreferredDuringSchedulingIgnoredDuringExecution {
				if w.Weight == 100 {
					terms = append(terms, w.PodAffinityTerm)
				}
			}
		}
		keepsOff := func(l map[string]string) bool {
			return slices.ContainsFunc(terms, func(term corev1.PodAffinityTerm) bool {
				sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
				return err == nil && sel.Matches(labels.Set(l)) && term.TopologyKey == "kubernetes.io/hostname"
			})
		}
		if !keepsOff(podLabels[other]) {
			t.Errorf("%s: %s pods may share a node with %s pods", name, me, other)
		}
		if keepsOff(podLabels[me]) || keepsOff(podLabels["sweep"]) {
			t.Errorf("%s: %s pods are kept off their own role's or the sweep's nodes by a hard term", name, me)
		}
		if len(sut) > 0 && !keepsOff(sut) {
			t.Errorf("%s: %s pods may share a node with the system under test %v", name, me, sut)
		}
		if len(sut) > 0 && !slices.ContainsFunc(terms, func(term corev1.PodAffinityTerm) bool {
			return term.NamespaceSelector != nil && len(term.NamespaceSelector.MatchLabels) == 0 && len(term.NamespaceSelector.MatchExpressions) == 0
		}) {
			t.Errorf("%s: the system-under-test term is not across every namespace", name)
		}
	}
}

// checkJob: the sweep runs once (no retry hides a failure), finds the
// agents through the Services that are deployed, writes its runs on the
// claim that is deployed, and profiles with the ConfigMap when there is one.
func checkJob(t *testing.T, name string, topo Topology, c *cluster, profiled bool) {
	j := c.jobs[0]
	spec := j.Spec.Template.Spec
	if j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 0 || spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("%s: Job backoff %v restart %q: a failed sweep would be rerun", name, j.Spec.BackoffLimit, spec.RestartPolicy)
	}
	ctr := spec.Containers[0]
	args := strings.Join(ctr.Args, " ")
	for _, s := range c.services {
		fqdn := s.Name + "." + s.Namespace + ".svc." + topo.ClusterDomain
		if !strings.Contains(args, "dns:"+fqdn+":") {
			t.Errorf("%s: the sweep does not look up Service %s (%s): %s", name, s.Name, fqdn, args)
		}
	}
	claim := c.claims[0]
	mountedRuns := false
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Name {
			mountedRuns = slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == v.Name && m.MountPath == RunsDir })
		}
	}
	if !mountedRuns || !strings.Contains(args, "--results "+RunsDir) {
		t.Errorf("%s: the run directory is not on the claim %s: args %q", name, claim.Name, args)
	}
	if q := claim.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse(topo.RunsSize)) != 0 {
		t.Errorf("%s: claim of %s, want %s", name, q.String(), topo.RunsSize)
	}
	if profiled != strings.Contains(args, "--profile "+handlersDir+"/handlers.yaml") {
		t.Errorf("%s: profiled %v but args %q", name, profiled, args)
	}
	if !strings.HasSuffix(args, strings.Join(topo.SweepArgs, " ")) {
		t.Errorf("%s: the user's sweep flags %v are not last in %q", name, topo.SweepArgs, args)
	}
}
