{{/*
The release's name prefixes every object's name, as --name does for
cpsweep deploy kubernetes. The longest derived name is NAME-receiver-NNN
(a StatefulSet's pod, also a label value), hence at most 30 characters.
*/}}
{{- define "cp.prefix" -}}
{{- $n := .Release.Name -}}
{{- if or (gt (len $n) 30) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $n)) -}}
{{- fail (printf "release name %q: lower-case letters, digits and '-', at most 30 characters (it prefixes every object's name, and the receivers' pods are NAME-receiver-NNN)" $n) -}}
{{- end -}}
{{- $n -}}
{{- end -}}

{{/* labels of an object; "component" is sender, receiver, sweep or "" */}}
{{- define "cp.labels" -}}
app.kubernetes.io/name: cloudprofiler
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end -}}

{{/* a role's selector: its labels but the manager (selectors are immutable) */}}
{{- define "cp.selector" -}}
app.kubernetes.io/name: cloudprofiler
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "cp.tokenSecret" -}}
{{- .Values.existingSecret | default (printf "%s-token" (include "cp.prefix" .)) -}}
{{- end -}}

{{/*
Anti-affinity: senders, receivers and the system under test on different
nodes (they would share CPUs, and the sweep would measure the sharing);
agents of one role spread when they can; the sweep's pod only prefers to
stay away from the agents.
*/}}
{{- define "cp.affinity" -}}
{{- $root := .root -}}
{{- $host := "kubernetes.io/hostname" -}}
{{- $match := dict "app.kubernetes.io/name" "cloudprofiler" "app.kubernetes.io/instance" $root.Release.Name -}}
{{- $others := get (dict "sender" (list "receiver") "receiver" (list "sender") "sweep" (list "sender" "receiver")) .component -}}
{{- $apart := list (dict "labelSelector" (dict "matchLabels" $match "matchExpressions" (list (dict "key" "app.kubernetes.io/component" "operator" "In" "values" $others))) "topologyKey" $host) -}}
{{- with $root.Values.sutSelector -}}
{{- $apart = append $apart (dict "labelSelector" (dict "matchLabels" .) "namespaceSelector" (dict) "topologyKey" $host) -}}
{{- end -}}
{{- $own := dict "weight" 50 "podAffinityTerm" (dict "labelSelector" (dict "matchLabels" $match "matchExpressions" (list (dict "key" "app.kubernetes.io/component" "operator" "In" "values" (list .component)))) "topologyKey" $host) -}}
{{- $weight := 100 -}}
{{- if eq .component "sweep" -}}{{- $weight = 50 -}}{{- end -}}
{{- $weighted := list -}}
{{- range $apart -}}{{- $weighted = append $weighted (dict "weight" $weight "podAffinityTerm" .) -}}{{- end -}}
{{- $a := dict -}}
{{- if eq .component "sweep" -}}
{{- $_ := set $a "preferredDuringSchedulingIgnoredDuringExecution" $weighted -}}
{{- else if eq $root.Values.antiAffinity "required" -}}
{{- $_ := set $a "requiredDuringSchedulingIgnoredDuringExecution" $apart -}}
{{- $_ := set $a "preferredDuringSchedulingIgnoredDuringExecution" (list $own) -}}
{{- else -}}
{{- $_ := set $a "preferredDuringSchedulingIgnoredDuringExecution" (append $weighted $own) -}}
{{- end -}}
{{- toYaml (dict "podAntiAffinity" $a) -}}
{{- end -}}

{{/*
What every container shares: the image, Guaranteed resources (requests =
limits, whole CPUs, so that the static CPU manager pins them), the token
mounted read-only, a writable /tmp on a read-only root, no privileges.
"role" is the values of the pod's role (cpus, memory).
*/}}
{{- define "cp.container" -}}
image: {{ printf "%s:%s" .root.Values.image.repository .root.Values.image.tag | quote }}
imagePullPolicy: {{ .root.Values.image.pullPolicy }}
resources:
  requests:
    cpu: {{ .role.cpus | quote }}
    memory: {{ .role.memory | quote }}
  limits:
    cpu: {{ .role.cpus | quote }}
    memory: {{ .role.memory | quote }}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
{{- end -}}

{{- define "cp.mounts" -}}
- name: token
  mountPath: /etc/cp/token
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* the pod's part of cp.container: user 65532, the Secret readable by its group only (0440 = 288) */}}
{{- define "cp.pod" -}}
{{- with .role.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
affinity:
  {{- include "cp.affinity" . | nindent 2 }}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  fsGroup: 65532
terminationGracePeriodSeconds: 10
{{- if and .root.Values.hostNetwork (ne .component "sweep") }}
hostNetwork: true
dnsPolicy: ClusterFirstWithHostNet
{{- end }}
{{- end -}}

{{- define "cp.volumes" -}}
- name: token
  secret:
    secretName: {{ include "cp.tokenSecret" .root }}
    defaultMode: 288
- name: tmp
  emptyDir:
    sizeLimit: 1Gi
{{- end -}}
