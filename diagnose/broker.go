package diagnose

import (
	"maps"
	"slices"
	"strings"

	"github.com/cloudprofiler-go/cp/driver"
)

// Broker names a broker's topic (driver:subject, as a job reads it, or
// driver.Endpoint.Topic) as every analysis names that stage: "jetstream
// ysb.in" ("": not a topic). In a job sweep it is one stage: the senders
// feed it, the job's input drains it, the job's lag on it is its queue.
func Broker(topic string) string {
	d, s, ok := strings.Cut(topic, ":")
	if !ok || d == "" || s == "" {
		return ""
	}
	return d + " " + s
}

// IsBroker says whether a stage's name, with or without a node's
// prefix, is a broker's (Broker).
func IsBroker(name string) bool {
	d, s, ok := strings.Cut(name[strings.LastIndex(name, "/")+1:], " ")
	if !ok || s == "" || strings.Contains(s, " ") {
		return false
	}
	switch strings.ToLower(d) {
	case driver.NATS, driver.JetStream, driver.Redis, driver.Kafka:
		return true
	}
	return false
}

// BrokerProcesses are the names of the processes that serve a topic's
// broker (driver:subject), as ps shows them (--sut-process): a broker held
// back shows in their CPU and in the time they waited to run.
func BrokerProcesses(topic string) []string {
	d, _, _ := strings.Cut(topic, ":")
	switch d {
	case driver.NATS, driver.JetStream:
		return []string{"nats-server"}
	case driver.Redis:
		return []string{"redis-server"}
	case driver.Kafka:
		return []string{"java", "kafka", "redpanda"}
	}
	return nil
}

// jobInput is the broker stage of the topic the sweep's jobs read that
// no job writes: the system's input ("": no job says its topics).
func (b *builder) jobInput() string {
	written := map[string]bool{}
	for _, p := range b.in.Processes {
		for _, w := range p.Writes {
			written[w] = true
		}
	}
	for _, p := range b.in.Processes {
		if p.Role != roleJob {
			continue
		}
		for _, r := range p.Reads {
			if !written[r] {
				return Broker(r)
			}
		}
	}
	return ""
}

// senderEdges adds an edge from every sender thread to module n.
func (b *builder) senderEdges(threadOf map[uint32][2]int, n int) {
	for _, id := range slices.Sorted(maps.Keys(threadOf)) {
		th := threadOf[id]
		p := b.in.Processes[th[0]]
		if m, ok := b.byName[b.prefix(p)+p.Series.Stages[th[1]].Name]; ok {
			b.edges = append(b.edges, [2]int{m, n})
		}
	}
}
