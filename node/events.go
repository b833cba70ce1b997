package node

import (
	"sync"
	"time"
)

// EventType names what happened.
type EventType string

// Event types, as `weft events` and the API's event stream show them.
const (
	EventScanned          EventType = "scanned"
	EventEntryWritten     EventType = "entry-written"
	EventEntryReceived    EventType = "entry-received"
	EventApplied          EventType = "file-applied"
	EventConflict         EventType = "conflict"
	EventError            EventType = "error"
	EventPeerConnected    EventType = "peer-connected"
	EventPeerDisconnected EventType = "peer-disconnected"
	EventPeerJoined       EventType = "peer-joined"
	EventPeerStatus       EventType = "peer-status"
	EventReconciled       EventType = "reconciled"
)

// Event is one thing that happened, with what it concerns.
type Event struct {
	Time   time.Time `json:"time"`
	Type   EventType `json:"type"`
	Folder string    `json:"folder,omitempty"`
	Path   string    `json:"path,omitempty"`
	Peer   string    `json:"peer,omitempty"`
	Kind   string    `json:"kind,omitempty"`
	Count  int       `json:"count,omitempty"`
	Bytes  int64     `json:"bytes,omitempty"`
	Seq    uint64    `json:"seq,omitempty"`
	Error  string    `json:"error,omitempty"`
}

// events fans events out to subscribers. A subscriber that does not keep
// up loses events rather than slowing the node down.
type events struct {
	mu   sync.Mutex // guards subs
	subs map[chan Event]struct{}
}

func newEvents() *events { return &events{subs: map[chan Event]struct{}{}} }

func (e *events) publish(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for c := range e.subs {
		select {
		case c <- ev:
		default:
		}
	}
}

// subscribe returns a channel of events and a function that ends the
// subscription.
func (e *events) subscribe() (<-chan Event, func()) {
	c := make(chan Event, 256)
	e.mu.Lock()
	e.subs[c] = struct{}{}
	e.mu.Unlock()
	return c, func() {
		e.mu.Lock()
		delete(e.subs, c)
		e.mu.Unlock()
	}
}

// Subscribe returns a channel of the node's events and a function that
// ends the subscription. A subscriber that does not keep up loses events.
func (n *Node) Subscribe() (<-chan Event, func()) { return n.events.subscribe() }
