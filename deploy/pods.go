package deploy

import (
	"fmt"
	"strconv"
	"time"
)

func (r renderer) statefulSet(ro role) statefulSet {
	return statefulSet{typeMeta{"apps/v1", "StatefulSet"}, r.meta(r.name(string(ro)), ro), statefulSetSpec{
		Replicas:    r.roleOf(ro).Count,
		ServiceName: r.name(string(ro)),
		// Parallel: the agents are peers; none waits for another to start.
		PodManagementPolicy: "Parallel",
		Selector:            labelSelector{MatchLabels: r.selector(ro)},
		Template:            podTemplateSpec{Metadata: objectMeta{Labels: r.labels(ro)}, Spec: r.agentPod(ro)},
	}}
}

func (r renderer) agentPod(ro role) podSpec {
	binary := "dgsend"
	if ro == roleReceiver {
		binary = "dgrecv"
	}
	c := r.container(string(ro), ro)
	c.Command = []string{binary}
	c.Args = r.agentArgs(ro)
	c.Ports = r.containerPorts(ro)
	c.ReadinessProbe = &probe{TCPSocket: tcpSocketAction{Port: "control"}, PeriodSeconds: 2, InitialDelaySeconds: 1}
	return r.pod(ro, c)
}

// container is what every container shares: the image, Guaranteed
// resources, the token mounted read-only, a writable /tmp (the agents'
// profiled-trial logs) on a read-only root, no privileges.
func (r renderer) container(name string, ro role) container {
	return container{
		Name: name, Image: r.t.Image, ImagePullPolicy: r.t.PullPolicy,
		Resources: guaranteed(r.roleOf(ro)),
		VolumeMounts: []volumeMount{
			{Name: "token", MountPath: tokenDir, ReadOnly: true},
			{Name: "tmp", MountPath: "/tmp"},
		},
		SecurityContext: containerSecurityCtx{ReadOnlyRootFilesystem: true, Capabilities: capabilities{Drop: []string{"ALL"}}},
	}
}

func (r renderer) pod(ro role, c container) podSpec {
	p := podSpec{
		NodeSelector:                  r.roleOf(ro).NodeSelector,
		Affinity:                      r.affinity(ro),
		SecurityContext:               podSecurityContext{RunAsNonRoot: true, RunAsUser: agentUser, RunAsGroup: agentUser, FSGroup: agentUser},
		TerminationGracePeriodSeconds: 10,
		Containers:                    []container{c},
		Volumes: []volume{
			// 0440 with the pod's fsGroup: readable by the agent's user only
			{Name: "token", Secret: &secretVolume{SecretName: r.name("token"), DefaultMode: 0o440}},
			{Name: "tmp", EmptyDir: &emptyDirVolume{SizeLimit: "1Gi"}},
		},
	}
	if len(p.NodeSelector) == 0 {
		p.NodeSelector = nil
	}
	if r.t.HostNetwork && ro != roleSweep {
		p.HostNetwork, p.DNSPolicy = true, "ClusterFirstWithHostNet"
	}
	return p
}

// affinity keeps senders, receivers and the system under test on
// different nodes (they would share CPUs, and the sweep would measure the
// sharing); agents of one role spread when they can. The sweep's own pod
// only prefers to stay away from the agents.
func (r renderer) affinity(ro role) *affinity {
	others := map[role][]string{roleSender: {"receiver"}, roleReceiver: {"sender"}, roleSweep: {"sender", "receiver"}}[ro]
	apart := []podAffinityTerm{r.componentTerm(others...)}
	if len(r.t.SUTSelector) > 0 {
		apart = append(apart, podAffinityTerm{LabelSelector: labelSelector{MatchLabels: r.t.SUTSelector}, NamespaceSelector: &labelSelector{}, TopologyKey: "kubernetes.io/hostname"})
	}
	a := &affinity{}
	switch {
	case ro == roleSweep:
		a.PodAntiAffinity.Preferred = weighted(apart, 50)
		return a
	case r.t.AntiAffinity == "required":
		a.PodAntiAffinity.Required = apart
	default:
		a.PodAntiAffinity.Preferred = weighted(apart, 100)
	}
	a.PodAntiAffinity.Preferred = append(a.PodAntiAffinity.Preferred, weighted([]podAffinityTerm{r.componentTerm(string(ro))}, 50)...)
	return a
}

// weighted makes terms preferences of one weight.
func weighted(terms []podAffinityTerm, weight int) []weightedPodAffinityTerm {
	out := make([]weightedPodAffinityTerm, len(terms))
	for i, t := range terms {
		out[i] = weightedPodAffinityTerm{Weight: weight, PodAffinityTerm: t}
	}
	return out
}

// componentTerm selects this sweep's pods of the given components.
func (r renderer) componentTerm(components ...string) podAffinityTerm {
	return podAffinityTerm{
		LabelSelector: labelSelector{
			MatchLabels:      map[string]string{"app.kubernetes.io/name": "cloudprofiler", "app.kubernetes.io/instance": r.t.Name},
			MatchExpressions: []labelSelectorRequirement{{Key: "app.kubernetes.io/component", Operator: "In", Values: components}},
		},
		TopologyKey: "kubernetes.io/hostname",
	}
}

func (r renderer) runsClaim() persistentVolumeClaim {
	return persistentVolumeClaim{typeMeta{"v1", "PersistentVolumeClaim"}, r.meta(r.name("runs"), roleSweep), pvcSpec{
		AccessModes: []string{"ReadWriteOnce"},
		Resources:   pvcResources{Requests: map[string]string{"storage": r.t.RunsSize}},
	}}
}

// SweepArgs are the arguments the Job gives cpsweep: the agents by DNS,
// the token by file, the run directory on the volume, then the user's.
func (r renderer) sweepArgs(profiled bool) []string {
	a := []string{
		"--senders-from", fmt.Sprintf("dns:%s:%d", r.fqdn(roleSender), SenderPort), "--sender-count", strconv.Itoa(r.t.Senders.Count),
		"--receivers-from", fmt.Sprintf("dns:%s:%d", r.fqdn(roleReceiver), ReceiverPort), "--receiver-count", strconv.Itoa(r.t.Receivers.Count),
		"--token-file", TokenPath, "--results", RunsDir,
	}
	if profiled {
		a = append(a, "--profile", handlersDir+"/handlers.yaml")
	}
	if r.t.JobInput != "" {
		a = append(a, "--input", r.t.JobInput, "--output", r.t.JobOutput)
	}
	return append(a, r.t.SweepArgs...)
}

// holdScript runs cpsweep, keeps its exit status beside the run
// directory, and waits so that kubectl cp (which needs a running pod) can
// copy the runs out; the Job ends with cpsweep's status.
const holdScript = `cpsweep "$@"; status=$?
echo "$status" > ` + RunsDir + `/last-exit-status
echo "cpsweep exited $status; the run directories stay on the volume at ` + RunsDir + `; copy them out within ${HOLD_SECONDS}s: kubectl cp"
sleep "$HOLD_SECONDS"
exit "$status"`

func (r renderer) job(profiled bool) job {
	c := r.container("cpsweep", roleSweep)
	c.Command = []string{"/bin/sh", "-c", holdScript, "cpsweep"}
	c.Args = r.sweepArgs(profiled)
	c.VolumeMounts = append(c.VolumeMounts, volumeMount{Name: "runs", MountPath: RunsDir})
	p := r.pod(roleSweep, c)
	p.RestartPolicy = "Never"
	p.Volumes = append(p.Volumes, volume{Name: "runs", PersistentVolumeClaim: &persistentClaimVolume{ClaimName: r.name("runs")}})
	if profiled {
		p.Containers[0].VolumeMounts = append(p.Containers[0].VolumeMounts, volumeMount{Name: "handlers", MountPath: handlersDir, ReadOnly: true})
		p.Volumes = append(p.Volumes, volume{Name: "handlers", ConfigMap: &configMapVolume{Name: r.name("handlers")}})
	}
	p.Containers[0].Env = []envVar{{Name: "HOLD_SECONDS", Value: strconv.Itoa(int(r.t.Hold / time.Second))}}
	return job{typeMeta{"batch/v1", "Job"}, r.meta(r.name("sweep"), roleSweep), jobSpec{BackoffLimit: 0, Template: podTemplateSpec{Metadata: objectMeta{Labels: r.labels(roleSweep)}, Spec: p}}}
}
