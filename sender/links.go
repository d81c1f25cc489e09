package sender

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	zmq "github.com/pebbe/zmq4"
)

// A sender cannot know what was delivered, but it can know when it could
// not have been: it watches every data socket's connections (ZeroMQ's
// socket monitor) and reports each disconnect, a peer that never came or
// was gone at the end, and queued messages (the end markers among them)
// that could not be flushed before the sockets closed.

// LinkEvent is a connection event of a data socket.
type LinkEvent struct {
	At    time.Time `json:"at"`
	Event string    `json:"event"` // connected, accepted, disconnected
	Peer  string    `json:"peer"`
}

// maxLinkEvents bounds the events kept per socket (the counts go on).
const maxLinkEvents = 64

// Link is what became of one data socket's connections during a run.
type Link struct {
	Thread         int         `json:"thread"`
	Endpoint       string      `json:"endpoint"`
	Connects       uint64      `json:"connects"`
	Disconnects    uint64      `json:"disconnects"`
	PeersAtEnd     int         `json:"peers_at_end"`
	Flushed        bool        `json:"flushed"` // everything queued (end marker included) left before the socket closed
	Events         []LinkEvent `json:"events"`
	EventsDropped  uint64      `json:"events_dropped"`
	linger         time.Duration
	peers          atomic.Int32
	connects, disc atomic.Uint64
	mu             sync.Mutex
}

func (l *Link) record(ev LinkEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.Events) < maxLinkEvents {
		l.Events = append(l.Events, ev)
	} else {
		l.EventsDropped++
	}
}

// Problem says why delivery cannot be vouched for ("" when it can).
func (l *Link) Problem() string {
	switch {
	case l.Connects == 0:
		return fmt.Sprintf("thread %d: no peer ever connected on %s: nothing was delivered", l.Thread, l.Endpoint)
	case l.PeersAtEnd == 0:
		return fmt.Sprintf("thread %d: the peer on %s was gone at the end (%d disconnect(s)): the end marker and queued tuples were not delivered", l.Thread, l.Endpoint, l.Disconnects)
	case l.Disconnects > 0:
		return fmt.Sprintf("thread %d: %d disconnect(s) on %s during the run: tuples in flight may be lost (the receiver's accounting says which)", l.Thread, l.Disconnects, l.Endpoint)
	case !l.Flushed:
		return fmt.Sprintf("thread %d: queued messages on %s (the end marker among them) could not be flushed within %v", l.Thread, l.Endpoint, l.linger)
	}
	return ""
}

// monitor reads the monitor events of every data socket until the
// sockets close.
type monitor struct {
	pairs []*zmq.Socket
	links []*Link
	done  chan struct{}
	quit  atomic.Bool // ends the goroutine if a socket never reports its close
}

// watch starts monitoring sock (before it connects or binds, so that no
// event is missed); the monitor's goroutine starts with run.
func (m *monitor) watch(ctx *zmq.Context, sock *zmq.Socket, thread int, endpoint string) (*Link, error) {
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
	l := &Link{Thread: thread, Endpoint: endpoint, Events: []LinkEvent{}}
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
func (l *Link) apply(ev zmq.Event, peer string) bool {
	now := time.Now().UTC()
	switch ev {
	case zmq.EVENT_CONNECTED, zmq.EVENT_ACCEPTED:
		l.peers.Add(1)
		l.connects.Add(1)
		name := "connected"
		if ev == zmq.EVENT_ACCEPTED {
			name = "accepted"
		}
		l.record(LinkEvent{At: now, Event: name, Peer: peer})
	case zmq.EVENT_DISCONNECTED:
		if l.peers.Add(-1) < 0 {
			l.peers.Store(0)
		}
		l.disc.Add(1)
		l.record(LinkEvent{At: now, Event: "disconnected", Peer: peer})
	case zmq.EVENT_MONITOR_STOPPED:
		return true
	}
	return false
}

// connectGrace is how long a run that ends before its first connection
// was seen waits for one (a short run can end before the handshake).
const connectGrace = time.Second

// awaitFirst waits up to grace for a first connection, if none was seen.
func (l *Link) awaitFirst(grace time.Duration) {
	for deadline := time.Now().Add(grace); l.connects.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// settle takes the link's state at the end of the run (when the end
// marker is queued); events after it are kept but judge nothing.
func (l *Link) settle() {
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
