// Package scenarios describes workloads: the tuple schema (the Yahoo
// streaming benchmark ad event, or a synthetic tuple of configurable size),
// how tuples are generated deterministically from a seed, and how a receiver
// decodes them into objects without copying.
//
// A scenario is a small YAML file (see the *.yaml files in this directory,
// which are also compiled in as built-ins):
//
//	name: ad-event
//	schema: ad-event     # or: synthetic
//	seed: 42
//	distinct: 1024       # distinct tuples pre-serialized and cycled through
//	size: 100            # synthetic only: encoded tuple size in bytes
package scenarios
