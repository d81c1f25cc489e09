// Package trialcfg defines, once, the settings of a trial that the sweep's
// plan, the agents' protocol and the sender and receiver that run it share.
// Each of them embeds these structs instead of copying their fields, so
// that adding a setting touches its flag, its field here and the code that
// uses it, and nothing else; the JSON of every embedder stays flat, as
// before (the plan in summary.json, the trials on the wire).
package trialcfg
