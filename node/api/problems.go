package api

import (
	"sync"
	"time"
)

// Problems as events. Every item of a folder's status errors[] and every
// change of its state is also published on the event stream, once, when
// it appears and when it clears: "problem" (Kind the code, Path, Peer,
// Error the reason) and "problem-cleared", and "folder-state" (Kind the
// new state). The agent's monitor (node/monitor.go) checks every few
// seconds, and every status call checks too, so a problem shows on the
// stream within seconds whether or not anyone asks for status; /metrics counts them (weft_problems_total).
// An item without a since of its own (a path's problem) gets the time it
// was first seen here.

// problemKey names one errors[] item.
type problemKey struct{ folder, code, path, peer string }

// ProblemTracker remembers the errors[] items and states last seen. Its
// methods are safe for concurrent use.
type ProblemTracker struct {
	mu     sync.Mutex
	seen   map[problemKey]time.Time // first seen
	reason map[problemKey]string
	states map[string]string // folder -> state
}

// Track stamps the folders' items that have no since with when they were
// first seen, and publishes what appeared, cleared or changed since the
// last call.
func (p *ProblemTracker) Track(folders []FolderStatus, now time.Time, publish func(Event)) {
	var out []Event
	p.mu.Lock()
	if p.seen == nil {
		p.seen, p.reason, p.states = map[problemKey]time.Time{}, map[problemKey]string{}, map[string]string{}
	}
	present := map[problemKey]bool{}
	tracked := map[string]bool{}
	for i := range folders {
		f := &folders[i]
		tracked[f.Path] = true
		// A scan after the first (the watcher's, a fallback rescan) is a
		// moment, not a change of state: every few seconds under
		// fallback rescans it would publish scanning and back.
		was, known := p.states[f.Path]
		moment := f.State == "scanning" && f.InitialScanDone && known
		if !moment && (!known || was != f.State) {
			p.states[f.Path] = f.State
			out = append(out, Event{Type: EventFolderState, Folder: f.Path, Kind: f.State, Error: f.Error})
		}
		for j := range f.Errors {
			e := &f.Errors[j]
			k := problemKey{f.Path, e.Code, e.Path, e.Peer}
			present[k] = true
			first, ok := p.seen[k]
			if !ok {
				first = now
				if e.Since != nil {
					first = *e.Since
				}
				p.seen[k] = first
				out = append(out, Event{Type: EventProblem, Folder: f.Path, Path: e.Path, Peer: e.Peer, Kind: e.Code, Error: e.Reason})
			}
			p.reason[k] = e.Reason
			if e.Since == nil {
				t := first.UTC()
				e.Since = &t
			}
		}
	}
	for k := range p.seen {
		if !present[k] && tracked[k.folder] {
			out = append(out, Event{Type: EventProblemCleared, Folder: k.folder, Path: k.path, Peer: k.peer, Kind: k.code, Error: p.reason[k]})
			delete(p.seen, k)
			delete(p.reason, k)
		}
	}
	p.mu.Unlock()
	for _, ev := range out {
		publish(ev)
	}
}
