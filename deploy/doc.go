// Package deploy writes the Kubernetes manifests that run a sweep on a
// cluster: the sender and receiver agents as StatefulSets behind headless
// Services (cpsweep finds them by DNS), the token as a Secret, the
// profiler's handlers as a ConfigMap, Guaranteed QoS so that the static
// CPU manager can pin the emission threads, anti-affinity between the
// roles and the system under test, and the sweep itself as a Job that
// keeps its run directory on a volume.
//
// The manifests are built from small structs shaped like the API's
// objects, so the binaries do not link the Kubernetes client types; the
// tests decode every manifest strictly into the k8s.io/api types and
// check it with apimachinery's validation.
//
// helm/cloudprofiler is a Helm chart of the same objects; its test renders
// it with Helm's library and compares every object with Render's.
package deploy
