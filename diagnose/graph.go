package diagnose

import (
	"encoding/json"
	"fmt"

	"github.com/cloudprofiler-go/cp/stage"
)

// Label is a stage's diagnosis for one snapshot (Table 2.2).
type Label uint8

// The labels.
const (
	Healthy  Label = iota // active: processed messages
	DontCare              // inactive with nothing to do
	Blocked               // inactive because a stage after it was
	Stalled               // inactive by its own fault, holding others up
)

var labelNames = [...]string{"HEALTHY", "DONTCARE", "BLOCKED", "STALLED"}

func (l Label) String() string {
	if int(l) < len(labelNames) {
		return labelNames[l]
	}
	return fmt.Sprintf("Label(%d)", l)
}

// MarshalJSON writes the label's name.
func (l Label) MarshalJSON() ([]byte, error) { return json.Marshal(l.String()) }

// UnmarshalJSON reads a label's name.
func (l *Label) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	for i, n := range labelNames {
		if n == s {
			*l = Label(i)
			return nil
		}
	}
	return fmt.Errorf("unknown label %q", s)
}

// Module is one stage of the dependency graph and the counters it has:
// every module counts its messages (total_msgs); HasWait says it counts
// the time it waited for the modules it depends on (wait_time), HasQueue
// that it knows its work queue (queued_msgs).
type Module struct {
	Name     string     `json:"name"`
	Kind     stage.Kind `json:"kind"`
	HasWait  bool       `json:"has_wait"`
	HasQueue bool       `json:"has_queue"`
	// Thread names the thread an operator shares with others, prefixed as
	// its name is (ysb/pipeline thread 0; "": its own).
	Thread string `json:"thread,omitempty"`
	// LagQueue: a black box whose queue is a job's lag on its input (read
	// every 500 ms) and whose items are the job's output: a pause in them
	// is the job's (a window's), so no stall of it is confirmed.
	LagQueue bool `json:"lag_queue,omitempty"`
}

// Graph is a dependency graph: an edge parent -> child says the parent
// depends on the child to take its messages (the harness pushes, so
// dependency follows the data).
type Graph struct {
	Modules  []Module
	parents  [][]int32
	children [][]int32
	root     []bool
	topo     []int32 // ancestors first; nil when the graph has a cycle
}

// NewGraph builds a graph of mods with edges [parent, child] (indexes).
func NewGraph(mods []Module, edges [][2]int) (*Graph, error) {
	n := len(mods)
	g := &Graph{Modules: mods, parents: make([][]int32, n), children: make([][]int32, n), root: make([]bool, n)}
	seen := map[[2]int]bool{}
	for _, e := range edges {
		if e[0] < 0 || e[0] >= n || e[1] < 0 || e[1] >= n {
			return nil, fmt.Errorf("edge %v outside the %d modules", e, n)
		}
		if seen[e] {
			continue
		}
		seen[e] = true
		g.children[e[0]] = append(g.children[e[0]], int32(e[1]))
		g.parents[e[1]] = append(g.parents[e[1]], int32(e[0]))
	}
	for i := range g.root {
		g.root[i] = len(g.parents[i]) == 0
	}
	g.topo = topoOrder(g.children, g.parents)
	return g, nil
}

// Len is the number of modules.
func (g *Graph) Len() int { return len(g.Modules) }

// topoOrder is Kahn's order (ancestors first), or nil on a cycle.
func topoOrder(children, parents [][]int32) []int32 {
	n := len(children)
	in := make([]int, n)
	var queue []int32
	for i := range parents {
		in[i] = len(parents[i])
		if in[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	order := make([]int32, 0, n)
	for len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		order = append(order, m)
		for _, c := range children[m] {
			if in[c]--; in[c] == 0 {
				queue = append(queue, c)
			}
		}
	}
	if len(order) != n {
		return nil
	}
	return order
}

// Counters are one snapshot's inputs, by module: Δtotal_msgs, Δwait_time
// and σqueued_msgs (ignored where the module lacks the counter).
type Counters struct {
	Total []uint64
	Wait  []uint64
	Queue []int64
}

// NewCounters allocates counters for n modules.
func NewCounters(n int) Counters {
	return Counters{Total: make([]uint64, n), Wait: make([]uint64, n), Queue: make([]int64, n)}
}
