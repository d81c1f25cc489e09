// Package jsonev is the JSON event format of a broker endpoint with
// format=json (docs/brokers.md): one event per message, a flat JSON
// object, as a user's job reads and writes them. The senders' events are
// templates whose digit fields are patched in place (Digits); a job's
// output is read by a declared mapping of its field names (Fields,
// Decode), without allocating.
package jsonev
