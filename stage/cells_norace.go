//go:build !race

package stage

// store is the writer's plain store: its single writer needs no bus lock,
// and the readers load atomically (an aligned word is never torn). A read
// that races with a change is detected by the mark and taken again (see
// Account.Read). Race-detector builds store atomically (cells_race.go).
func store(p *uint64, v uint64) { *p = v }
