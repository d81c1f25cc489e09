package deploy

// The objects below carry only the fields the manifests use, with the
// API's JSON names; the tests decode them strictly into k8s.io/api.

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

type objectMeta struct {
	Name      string            `json:"name,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

type namespace struct {
	typeMeta `json:",inline"`
	Metadata objectMeta `json:"metadata"`
}

type secret struct {
	typeMeta `json:",inline"`
	Metadata objectMeta        `json:"metadata"`
	Type     string            `json:"type"`
	Data     map[string][]byte `json:"data"` // base64 in JSON, as the API wants
}

type configMap struct {
	typeMeta `json:",inline"`
	Metadata objectMeta        `json:"metadata"`
	Data     map[string]string `json:"data"`
}

type service struct {
	typeMeta `json:",inline"`
	Metadata objectMeta  `json:"metadata"`
	Spec     serviceSpec `json:"spec"`
}

type serviceSpec struct {
	ClusterIP string            `json:"clusterIP"`
	Selector  map[string]string `json:"selector"`
	Ports     []servicePort     `json:"ports"`
	// PublishNotReadyAddresses stays false: the Service lists only ready
	// agents, so the sweep's discovery counts agents that answer.
	PublishNotReadyAddresses bool `json:"publishNotReadyAddresses"`
}

type servicePort struct {
	Name       string `json:"name"`
	Protocol   string `json:"protocol"`
	Port       int    `json:"port"`
	TargetPort string `json:"targetPort"`
}

type statefulSet struct {
	typeMeta `json:",inline"`
	Metadata objectMeta      `json:"metadata"`
	Spec     statefulSetSpec `json:"spec"`
}

type statefulSetSpec struct {
	Replicas            int             `json:"replicas"`
	ServiceName         string          `json:"serviceName"`
	PodManagementPolicy string          `json:"podManagementPolicy"`
	Selector            labelSelector   `json:"selector"`
	Template            podTemplateSpec `json:"template"`
}

type labelSelector struct {
	MatchLabels      map[string]string          `json:"matchLabels,omitempty"`
	MatchExpressions []labelSelectorRequirement `json:"matchExpressions,omitempty"`
}

type labelSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values"`
}

type podTemplateSpec struct {
	Metadata objectMeta `json:"metadata"`
	Spec     podSpec    `json:"spec"`
}

type podSpec struct {
	RestartPolicy                 string             `json:"restartPolicy,omitempty"`
	HostNetwork                   bool               `json:"hostNetwork,omitempty"`
	DNSPolicy                     string             `json:"dnsPolicy,omitempty"`
	NodeSelector                  map[string]string  `json:"nodeSelector,omitempty"`
	Affinity                      *affinity          `json:"affinity,omitempty"`
	SecurityContext               podSecurityContext `json:"securityContext"`
	TerminationGracePeriodSeconds int                `json:"terminationGracePeriodSeconds"`
	Containers                    []container        `json:"containers"`
	Volumes                       []volume           `json:"volumes"`
}

type podSecurityContext struct {
	RunAsNonRoot bool `json:"runAsNonRoot"`
	RunAsUser    int  `json:"runAsUser"`
	RunAsGroup   int  `json:"runAsGroup"`
	FSGroup      int  `json:"fsGroup"`
}

type affinity struct {
	PodAntiAffinity podAntiAffinity `json:"podAntiAffinity"`
}

type podAntiAffinity struct {
	Required  []podAffinityTerm         `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	Preferred []weightedPodAffinityTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

type podAffinityTerm struct {
	LabelSelector labelSelector `json:"labelSelector"`
	// NamespaceSelector {} matches every namespace: the system under test
	// usually runs in its own.
	NamespaceSelector *labelSelector `json:"namespaceSelector,omitempty"`
	TopologyKey       string         `json:"topologyKey"`
}

type weightedPodAffinityTerm struct {
	Weight          int             `json:"weight"`
	PodAffinityTerm podAffinityTerm `json:"podAffinityTerm"`
}

type container struct {
	Name            string               `json:"name"`
	Image           string               `json:"image"`
	ImagePullPolicy string               `json:"imagePullPolicy"`
	Command         []string             `json:"command"`
	Args            []string             `json:"args,omitempty"`
	Env             []envVar             `json:"env,omitempty"`
	Ports           []containerPort      `json:"ports,omitempty"`
	Resources       resources            `json:"resources"`
	ReadinessProbe  *probe               `json:"readinessProbe,omitempty"`
	VolumeMounts    []volumeMount        `json:"volumeMounts"`
	SecurityContext containerSecurityCtx `json:"securityContext"`
}

type containerSecurityCtx struct {
	AllowPrivilegeEscalation bool         `json:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   bool         `json:"readOnlyRootFilesystem"`
	Capabilities             capabilities `json:"capabilities"`
}

type capabilities struct {
	Drop []string `json:"drop"`
}

type containerPort struct {
	Name          string `json:"name"`
	ContainerPort int    `json:"containerPort"`
	Protocol      string `json:"protocol"`
}

type resources struct {
	Requests map[string]string `json:"requests"`
	Limits   map[string]string `json:"limits"`
}

type probe struct {
	TCPSocket           tcpSocketAction `json:"tcpSocket"`
	PeriodSeconds       int             `json:"periodSeconds"`
	InitialDelaySeconds int             `json:"initialDelaySeconds"`
}

type tcpSocketAction struct {
	Port string `json:"port"`
}

type volumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

type volume struct {
	Name                  string                 `json:"name"`
	Secret                *secretVolume          `json:"secret,omitempty"`
	ConfigMap             *configMapVolume       `json:"configMap,omitempty"`
	EmptyDir              *emptyDirVolume        `json:"emptyDir,omitempty"`
	PersistentVolumeClaim *persistentClaimVolume `json:"persistentVolumeClaim,omitempty"`
}

type secretVolume struct {
	SecretName  string `json:"secretName"`
	DefaultMode int    `json:"defaultMode"`
}

type configMapVolume struct {
	Name string `json:"name"`
}

type emptyDirVolume struct {
	SizeLimit string `json:"sizeLimit,omitempty"`
}

type persistentClaimVolume struct {
	ClaimName string `json:"claimName"`
}

type persistentVolumeClaim struct {
	typeMeta `json:",inline"`
	Metadata objectMeta `json:"metadata"`
	Spec     pvcSpec    `json:"spec"`
}

type pvcSpec struct {
	AccessModes []string     `json:"accessModes"`
	Resources   pvcResources `json:"resources"`
}

type pvcResources struct {
	Requests map[string]string `json:"requests"`
}

type job struct {
	typeMeta `json:",inline"`
	Metadata objectMeta `json:"metadata"`
	Spec     jobSpec    `json:"spec"`
}

type jobSpec struct {
	// BackoffLimit 0: a failed sweep is reported, never silently rerun
	// (a second run would overwrite nothing, but it would hide the first
	// one's failure behind a new answer).
	BackoffLimit int             `json:"backoffLimit"`
	Template     podTemplateSpec `json:"template"`
}

type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}
