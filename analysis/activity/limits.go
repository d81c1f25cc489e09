package activity

import "fmt"

// MaxHeld bounds the activities a streamed graph holds at once (40 bytes
// each with the running input wait beside it: 160 MiB). A real trace holds a window's worth (hundreds); a log
// that crams millions of state changes into one instant (a damaged or
// hostile file) reaches it, and the graph stops there with ErrHeldLimit
// instead of growing without bound.
const MaxHeld = 1 << 22

// ErrHeldLimit is Stream.Activity's error at MaxHeld.
var ErrHeldLimit = fmt.Errorf("more than %d activities would be held at once (within one window): a damaged log, or windows too long", MaxHeld)
