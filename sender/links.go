package sender

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cloudprofiler-go/cp/sender/tally"
	zmq "github.com/pebbe/zmq4"
)

// A sender cannot know what was delivered, but it can know when it could
// not have been: it watches every data socket's connections (ZeroMQ's
// socket monitor) and reports each disconnect, a peer that never came or
// was gone at the end, and queued messages (the end markers among them)
// that could not be flushed before the sockets closed.

// link is a data socket's Link while the run goes on: the monitor's
// counts, published to the Link at the end (settle).
type link struct {
	*tally.Link
	peers          atomic.Int32
	connects, disc atomic.Uint64
	mu             sync.Mutex
}

func (l *link) record(ev tally.LinkEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.Events) < tally.MaxLinkEvents {
		l.Events = append(l.Events, ev)
	} else {
		l.EventsDropped++
	}
}

// monitor reads the monitor events of every data socket until the
// sockets close.
type monitor struct {
	pairs []*zmq.Socket
	links []*link
	done  chan struct{}
	quit  atomic.Bool // ends the goroutine if a socket never reports its close
}

// watch starts monitoring sock (before it connects or binds, so that no
// event is missed); the monitor's goroutine starts with run.
func (m *monitor) watch(ctx *zmq.Context, sock *zmq.Socket, thread int, endpoint string) (*link, error) {
	addr := fmt.Sprintf("inproc://cp-sender-monitor-%p-%d", m, thread)
	if err := sock.Monitor(addr, zmq.EVENT_CONNECTED|zmq.EVENT_ACCEPTED|zmq.EVENT_DISCONNECTED|zmq.EVENT_MONITOR_STOPPED); err != nil {
		return nil, fmt.Errorf("monitor %s: %w", endpoint, err)
	}
	pair, err := ctx.NewSocket(zmq.PAIR)
	if err != nil {
		return nil, fmt.Errorf("monitor %s: %w", endpoint, err)
	}
	_ = pair.SetLinger(0)
	if err := pair.Connect(addr); err != nil {
		pair.Close()
		return nil, fmt.Errorf("monitor %s: %w", endpoint, err)
	}
	l := &link{Link: &tally.Link{Thread: thread, Endpoint: endpoint, Events: []tally.LinkEvent{}}}
	m.pairs, m.links = append(m.pairs, pair), append(m.links, l)
	return l, nil
}

// run reads events until every monitored socket has closed (each sends
// MONITOR_STOPPED), then closes the monitor's own sockets.
func (m *monitor) run() {
	m.done = make(chan struct{})
	go func() {
		defer close(m.done)
		runtime.LockOSThread() // the pair sockets belong to this thread now
		defer runtime.UnlockOSThread()
		poller := zmq.NewPoller()
		for _, p := range m.pairs {
			poller.Add(p, zmq.POLLIN)
		}
		open := len(m.pairs)
		stopped := make([]bool, len(m.pairs))
		for open > 0 && !m.quit.Load() {
			polled, err := poller.Poll(100 * time.Millisecond)
			if err != nil && zmq.AsErrno(err) != zmq.Errno(syscall.EINTR) { // EINTR: poll again
				break
			}
			for _, p := range polled {
				i := indexOf(m.pairs, p.Socket)
				for !stopped[i] {
					ev, peer, _, err := p.Socket.RecvEvent(zmq.DONTWAIT)
					if err != nil {
						break
					}
					stopped[i] = m.links[i].apply(ev, peer)
					if stopped[i] {
						open--
					}
				}
			}
		}
		for _, p := range m.pairs {
			p.Close()
		}
	}()
}

func indexOf(pairs []*zmq.Socket, s *zmq.Socket) int {
	for i, p := range pairs {
		if p == s {
			return i
		}
	}
	return 0
}

// apply counts one event; it reports whether monitoring has stopped.
func (l *link) apply(ev zmq.Event, peer string) bool {
	now := time.Now().UTC()
	switch ev {
	case zmq.EVENT_CONNECTED, zmq.EVENT_ACCEPTED:
		l.peers.Add(1)
		l.connects.Add(1)
		name := "connected"
		if ev == zmq.EVENT_ACCEPTED {
			name = "accepted"
		}
		l.record(tally.LinkEvent{At: now, Event: name, Peer: peer})
	case zmq.EVENT_DISCONNECTED:
		if l.peers.Add(-1) < 0 {
			l.peers.Store(0)
		}
		l.disc.Add(1)
		l.record(tally.LinkEvent{At: now, Event: "disconnected", Peer: peer})
	case zmq.EVENT_MONITOR_STOPPED:
		return true
	}
	return false
}

// connectGrace is how long a run that ends before its first connection
// was seen waits for one (a short run can end before the handshake).
const connectGrace = time.Second

// awaitFirst waits up to grace for a first connection, if none was seen.
func (l *link) awaitFirst(grace time.Duration) {
	for deadline := time.Now().Add(grace); l.connects.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// settle takes the link's state at the end of the run (when the end
// marker is queued); events after it are kept but judge nothing.
func (l *link) settle() {
	l.mu.Lock()
	l.Connects, l.Disconnects, l.PeersAtEnd = l.connects.Load(), l.disc.Load(), int(l.peers.Load())
	l.mu.Unlock()
}

// wait blocks until the monitor has seen every socket close (bounded).
func (m *monitor) wait() {
	if m.done == nil { // never ran (Close before Run): the pairs are this goroutine's
		for _, p := range m.pairs {
			p.Close()
		}
		m.pairs = nil
		return
	}
	select {
	case <-m.done:
	case <-time.After(time.Second):
		m.quit.Store(true) // noticed within one poll
		<-m.done
	}
}
