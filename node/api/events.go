package api

import (
	"context"
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
	// EventMissed: the reader of the event stream missed events: it fell
	// further behind than the agent keeps (RetainEvents; Count is how
	// many), or resumed from an ID of another run of the agent (Count 0:
	// unknown). It is never filtered out.
	EventMissed EventType = "events-missed"
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
	// ID orders one agent's events: each is greater than every event
	// before it, across restarts too (Bus). A reader resumes after one
	// (GET /v1/events?since=ID, or the Last-Event-ID header).
	ID     uint64    `json:"id"`
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
	// Words: join-pending, and peer-joined of a join by invite code (on
	// every device: the add record carries them), the words both devices
	// of the join showed (member.Invite.Words).
	Words string `json:"words,omitempty"`
}

// RetainEvents is how many of the latest events the bus keeps for readers
// that resume or fall behind: minutes of a busy first sync, hours of an
// idle agent.
const RetainEvents = 4096

// Bus fans events out. Observers run synchronously inside publish and
// see every event (metrics count them, so they must not miss any); they
// must be quick and must not block.
//
// The bus keeps the last RetainEvents events. A Cursor reads them in
// order from any ID, so the event stream resumes after a reconnect, and a
// reader that falls behind further than that is told how many it missed
// (EventMissed) instead of losing them silently. In-process subscribers
// (Subscribe) get a buffered channel instead and lose what does not fit,
// so that they never slow the node down.
//
// IDs start at the microseconds of the bus's creation and go up by one
// per event, so the IDs of a restarted agent are greater than those of
// its earlier run unless that run published more events than
// microseconds passed (or the clock went back): a reader resuming from
// an ID of another run is told it missed events.
type Bus struct {
	mu        sync.Mutex // guards everything below
	subs      map[chan Event]struct{}
	observers []func(Event) []Event
	first     uint64        // the ID of this run's first event
	next      uint64        // the ID of the next event
	ring      []Event       // event ID i at ring[i%RetainEvents]
	grew      chan struct{} // closed and replaced at each event
}

// NewBus returns a bus with no observers or subscribers.
func NewBus() *Bus {
	start := uint64(max(time.Now().UnixMicro(), 1))
	return &Bus{subs: map[chan Event]struct{}{}, first: start, next: start,
		ring: make([]Event, RetainEvents), grew: make(chan struct{})}
}

// Observe adds an observer. It may return events derived from the one it
// saw (an entry became safe); they are published right after it.
func (e *Bus) Observe(fn func(Event) []Event) {
	e.mu.Lock()
	e.observers = append(e.observers, fn)
	e.mu.Unlock()
}

// Publish stamps ev with the time if it has none and with the next ID,
// runs the observers, keeps it for cursors, hands it to every subscriber
// that has room, then publishes what the observers derived from it.
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
	ev.ID = e.next
	e.next++
	e.ring[ev.ID%RetainEvents] = ev
	close(e.grew)
	e.grew = make(chan struct{})
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
// subscription. Events that do not fit the channel's buffer are dropped.
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

// Cursor reads the bus's events in order, each once, from after the
// event with ID after (0: from the next event published). A cursor is
// one reader's; it holds nothing of the bus between calls.
type Cursor struct {
	bus    *Bus
	next   uint64 // the ID of the next event to return
	missed uint64 // events to report missed before the next one
	other  bool   // the reader resumed from another run: missed unknown
}

// Cursor returns a cursor after the event with ID after (0: from now).
func (e *Bus) Cursor(after uint64) *Cursor {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := &Cursor{bus: e, next: e.next}
	if after == 0 {
		return c
	}
	if after+1 < e.first || after >= e.next {
		// Another run's ID (or one never given): what came between is
		// unknown; read from the oldest event kept.
		c.other = true
		c.next = max(e.first, e.next-min(e.next-e.first, RetainEvents))
		return c
	}
	c.next = after + 1
	return c
}

// Rewind moves the cursor back by up to n events, not past the oldest
// kept: a page that shows the latest events reads them with TryNext.
func (c *Cursor) Rewind(n int) {
	b := c.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	oldest := b.next - min(b.next-b.first, RetainEvents)
	c.next = max(oldest, c.next-min(c.next, uint64(max(n, 0))))
	c.missed, c.other = 0, false
}

// TryNext returns the cursor's next event if one is kept, without
// waiting and without reporting missed events (it skips to the oldest
// kept); false when the cursor has read everything published.
func (c *Cursor) TryNext() (Event, bool) {
	b := c.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	oldest := b.next - min(b.next-b.first, RetainEvents)
	c.next = max(c.next, oldest)
	c.missed, c.other = 0, false
	if c.next >= b.next {
		return Event{}, false
	}
	ev := b.ring[c.next%RetainEvents]
	c.next++
	return ev, true
}

// Next returns the cursor's next event, waiting for one until ctx ends.
// When the events it should return next are no longer kept (the reader
// fell behind by more than RetainEvents), or it resumed from another run,
// it returns an EventMissed event first and goes on from the oldest kept.
func (c *Cursor) Next(ctx context.Context) (Event, error) {
	b := c.bus
	for {
		b.mu.Lock()
		oldest := b.next - min(b.next-b.first, RetainEvents)
		if c.next < oldest {
			c.missed += oldest - c.next
			c.next = oldest
		}
		if c.missed > 0 || c.other {
			ev := Event{Type: EventMissed, Time: time.Now(), Count: int(c.missed)}
			if c.other {
				ev.Count = 0
			}
			c.missed, c.other = 0, false
			b.mu.Unlock()
			return ev, nil
		}
		if c.next < b.next {
			ev := b.ring[c.next%RetainEvents]
			c.next++
			b.mu.Unlock()
			return ev, nil
		}
		grew := b.grew
		b.mu.Unlock()
		select {
		case <-grew:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}
