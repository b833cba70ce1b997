package heard

import (
	"context"
	"sync"
	"time"

	"github.com/weftsync/weft/protocol/keys"
)

// RefusedLogEvery bounds how often a peer's refusals of this device's
// entries are logged.
const RefusedLogEvery = 10 * time.Minute

// EntryRefusals is when each peer's refusal of an entry this device sent
// was last logged. Its methods are safe for concurrent use.
type EntryRefusals struct {
	mu     sync.Mutex
	logged map[keys.DeviceID]time.Time
}

// Due reports whether a refusal by dev at now is to be logged: the first,
// and then at most one per RefusedLogEvery.
func (r *EntryRefusals) Due(dev keys.DeviceID, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.logged[dev]; ok && now.Sub(last) < RefusedLogEvery {
		return false
	}
	if r.logged == nil {
		r.logged = map[keys.DeviceID]time.Time{}
	}
	r.logged[dev] = now
	return true
}

// ForkProbes are the fork probes asked for, per peer, and how to end the
// running log pull from each (so that the next pull probes). Its methods
// are safe for concurrent use.
type ForkProbes struct {
	mu      sync.Mutex
	from    map[keys.DeviceID]uint64             // peer -> entry of the own log to compare with its copy
	restart map[keys.DeviceID]context.CancelFunc // ends the running log pull from a peer
}

// Probe notes that dev says entry seq of this device's log does not chain
// onto what it holds: the next pull from dev asks for its copy of this log
// from seq-1 on, to compare. The running pull from dev is ended.
func (p *ForkProbes) Probe(dev keys.DeviceID, seq uint64) {
	if seq < 2 {
		seq = 2 // the claim names no usable entry: compare from the first
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.from == nil {
		p.from = map[keys.DeviceID]uint64{}
	}
	p.from[dev] = seq - 1
	if r := p.restart[dev]; r != nil {
		r() // the running pull asked with the full vector; the next one probes
	}
}

// SetRestart records (nil: forgets) how to end the running log pull from
// dev.
func (p *ForkProbes) SetRestart(dev keys.DeviceID, cancel context.CancelFunc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cancel == nil {
		delete(p.restart, dev)
		return
	}
	if p.restart == nil {
		p.restart = map[keys.DeviceID]context.CancelFunc{}
	}
	p.restart[dev] = cancel
}

// Take returns the probe asked of dev, once.
func (p *ForkProbes) Take(dev keys.DeviceID) (from uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	from, ok = p.from[dev]
	delete(p.from, dev)
	return from, ok
}

// Membership is what the members this device opened streams to answered
// its Hello: accepted, or refused as not a member. Its methods are safe
// for concurrent use.
type Membership struct {
	mu     sync.Mutex
	by     map[keys.DeviceID]time.Time // members whose last answer refused this device as not a member
	ok     map[keys.DeviceID]time.Time // members whose last answer accepted it
	logged bool                        // the refusal was said (once per episode)
}

// Answer records dev's answer at now: refused as not a member, or
// accepted. It reports what to say once: the first refusal of an episode
// (refusedFirst), or a member that accepts this device again after it
// refused it (acceptedAgain).
func (m *Membership) Answer(dev keys.DeviceID, refused bool, now time.Time) (refusedFirst, acceptedAgain bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.by == nil {
		m.by, m.ok = map[keys.DeviceID]time.Time{}, map[keys.DeviceID]time.Time{}
	}
	if !refused {
		_, acceptedAgain = m.by[dev]
		delete(m.by, dev)
		m.ok[dev] = now
		if len(m.by) == 0 {
			m.logged = false
		}
		return false, acceptedAgain
	}
	delete(m.ok, dev)
	m.by[dev] = now
	if !m.logged {
		m.logged = true
		return true, false
	}
	return false, false
}

// Refused reports how many members refuse this device while none accepts
// it (0 when any accepts it): it was probably revoked.
func (m *Membership) Refused() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ok) > 0 {
		return 0
	}
	return len(m.by)
}
