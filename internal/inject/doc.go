// Package inject describes faults and phases injected into the harness's
// own stages, as test fixtures a user can also rehearse a diagnosis with:
// stalls (a stage stops for a while: "consumer@5s+1s", "lane0@2s+500ms",
// "thread1@3s+2s") and a schedule of per-tuple work that changes over the
// run ("10us@0s,40us@20s"). It parses and validates them; the stages
// apply them in their own loops.
package inject
