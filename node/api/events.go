package api

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
	// EventJoinPending: a device used a code made with --confirm and
	// waits for approval; Words is what it shows.
	EventJoinPending      EventType = "join-pending"
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

// Event types of the problem stream (problems.go): each item of a
// folder's status errors[] when it appears and clears, and each change of
// a folder's state.
const (
	EventProblem        EventType = "problem"
	EventProblemCleared EventType = "problem-cleared"
	EventFolderState    EventType = "folder-state"
)

// Event is one thing that happened, with what it concerns.
type Event struct {
	Time   time.Time `json:"time"`
	Type   EventType `json:"type"`
	Folder string    `json:"folder,omitempty"`
	Path   string    `json:"path,omitempty"`
	Peer   string    `json:"peer,omitempty"`
	// Name is Peer's name as the membership records it, where known.
	Name  string `json:"name,omitempty"`
	Kind  string `json:"kind,omitempty"`
	Count int    `json:"count,omitempty"`
	Bytes int64  `json:"bytes,omitempty"`
	Seq   uint64 `json:"seq,omitempty"`
	Error string `json:"error,omitempty"`
	// Words: join-pending and peer-joined of a confirmed join, the words
	// both devices show (member.Invite.Words).
	Words string `json:"words,omitempty"`
}

// Bus fans events out. Observers run synchronously inside publish and
// see every event (metrics count them, so they must not miss any); they
// must be quick and must not block. Subscribers get a buffered channel: a
// subscriber that does not keep up loses events rather than slowing the
// node down.
type Bus struct {
	mu        sync.Mutex // guards subs and observers
	subs      map[chan Event]struct{}
	observers []func(Event) []Event
}

// NewBus returns a bus with no observers or subscribers.
func NewBus() *Bus { return &Bus{subs: map[chan Event]struct{}{}} }

// Observe adds an observer. It may return events derived from the one it
// saw (an entry became safe); they are published right after it.
func (e *Bus) Observe(fn func(Event) []Event) {
	e.mu.Lock()
	e.observers = append(e.observers, fn)
	e.mu.Unlock()
}

// Publish stamps ev with the time if it has none, runs the observers, hands
// it to every subscriber that has room, then publishes what the observers
// derived from it.
func (e *Bus) Publish(ev Event) {
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
		e.Publish(d)
	}
}

// Subscribe returns a channel of events and a function that ends the
// subscription.
func (e *Bus) Subscribe() (<-chan Event, func()) {
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
