package node

import (
	"sync"
	"time"
)

// EventType names what happened.
type EventType string

// Event types, as `weft events` and the API's event stream show them.
// docs/api.md lists what each carries.
const (
	EventScanned          EventType = "scanned"
	EventLocalChange      EventType = "local-change"
	EventEntryWritten     EventType = "entry-written"
	EventEntrySafe        EventType = "entry-safe"
	EventEntryReceived    EventType = "entry-received"
	EventTransferStarted  EventType = "transfer-started"
	EventTransferFinished EventType = "transfer-finished"
	EventApplied          EventType = "file-applied"
	EventConflict         EventType = "conflict"
	EventError            EventType = "error"
	EventPeerConnected    EventType = "peer-connected"
	EventPeerDisconnected EventType = "peer-disconnected"
	EventPeerJoined       EventType = "peer-joined"
	EventPeerStatus       EventType = "peer-status"
	EventReconciled       EventType = "reconciled"
	EventWatcherRescan    EventType = "watcher-rescan"
	EventFolderStopped    EventType = "folder-stopped"
	EventFolderResumed    EventType = "folder-resumed"
	EventDeletionsHeld    EventType = "deletions-held"
	EventDeletionsDecided EventType = "deletions-decided"
	EventCorrupt          EventType = "corrupt"
	EventScrubbed         EventType = "scrubbed"
	// EventLogTailRecovered: entries of this device's own log, lost here,
	// were taken back from a peer (logtail.go). Seq is the head after,
	// Count how many.
	EventLogTailRecovered EventType = "log-tail-recovered"
	// EventMembershipRecovered: the membership log, damaged here, was
	// fetched again from a peer (memberrecover.go). Count is the records
	// held after.
	EventMembershipRecovered EventType = "membership-recovered"
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

// events fans events out. Observers run synchronously inside publish and
// see every event (metrics count them, so they must not miss any); they
// must be quick and must not block. Subscribers get a buffered channel: a
// subscriber that does not keep up loses events rather than slowing the
// node down.
type events struct {
	mu        sync.Mutex // guards subs and observers
	subs      map[chan Event]struct{}
	observers []func(Event) []Event
}

func newEvents() *events { return &events{subs: map[chan Event]struct{}{}} }

// observe adds an observer. It may return events derived from the one it
// saw (an entry became safe); they are published right after it.
func (e *events) observe(fn func(Event) []Event) {
	e.mu.Lock()
	e.observers = append(e.observers, fn)
	e.mu.Unlock()
}

func (e *events) publish(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.mu.Lock()
	obs := e.observers
	e.mu.Unlock()
	var derived []Event
	for _, fn := range obs {
		derived = append(derived, fn(ev)...)
	}
	e.mu.Lock()
	for c := range e.subs {
		select {
		case c <- ev:
		default:
		}
	}
	e.mu.Unlock()
	for _, d := range derived {
		e.publish(d)
	}
}

// subscribe returns a channel of events and a function that ends the
// subscription.
func (e *events) subscribe() (<-chan Event, func()) {
	c := make(chan Event, 1024)
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
