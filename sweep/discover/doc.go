// Package discover finds sweep agents by DNS instead of an address list: a
// Kubernetes headless Service answers one record per ready pod, so the
// agents of a StatefulSet are the Service's records. It waits, with a
// bound, until exactly the number of agents the user asked for answer, and
// refuses to go on with fewer: a sweep over fewer hosts than planned would
// measure another system.
package discover
