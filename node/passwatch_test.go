package node

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
)

// passWatch follows one vault's reconcile passes as they happen, so a test
// waits for what the node did ("a pass that decided f.txt has ended")
// rather than for a while. Decisions (the vault's onDecided hook), apply
// errors (EventError without a Kind) and pass ends (EventReconciled) land in one log in
// the order they were made: the hook and the event observer both run
// synchronously on the goroutine that reconciles, so a pass's decisions
// and errors always come before its end.
type passWatch struct {
	mu    sync.Mutex // guards marks
	marks []passMark
	poke  chan struct{} // buffer 1: a mark was added
}

// passMark is one thing a reconcile pass did.
type passMark struct {
	kind markKind
	path string // for markDecided and markError
}

type markKind int

const (
	markDecided markKind = iota // a path's decision was made (before it is carried out)
	markError                   // an apply failed and was reported (EventError)
	markEnded                   // a pass ended (EventReconciled)
)

// watchPasses starts recording v's reconcile passes. It takes v's
// onDecided hook for the rest of the test.
func watchPasses(t *testing.T, v *vault) *passWatch {
	t.Helper()
	w := &passWatch{poke: make(chan struct{}, 1)}
	hook := func(path string) { w.add(passMark{kind: markDecided, path: path}) }
	v.onDecided.Store(&hook)
	t.Cleanup(func() { v.onDecided.Store(nil) })
	// Observers cannot be removed; the node ends with the test.
	v.events.Observe(func(ev api.Event) []api.Event {
		if ev.Folder != v.cfg.Folder {
			return nil
		}
		switch ev.Type {
		case api.EventReconciled:
			w.add(passMark{kind: markEnded})
		case api.EventError:
			if ev.Kind != "" {
				return nil // a scan's, the watcher's, a peer's: not an apply's
			}
			w.add(passMark{kind: markError, path: ev.Path})
		}
		return nil
	})
	return w
}

func (w *passWatch) add(m passMark) {
	w.mu.Lock()
	w.marks = append(w.marks, m)
	w.mu.Unlock()
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

// len is the number of marks so far: pass it as from to wait only for
// what happens after now.
func (w *passWatch) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.marks)
}

// wait returns the index of the first mark at from or later that match
// accepts, waiting for it to happen. match runs on the test's goroutine
// (it may take v.mu). The deadline is generous: nothing here depends on
// how fast the node is, only on what it does.
func (w *passWatch) wait(t *testing.T, what string, from int, match func(passMark) bool) (int, passMark) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		w.mu.Lock()
		marks := slices.Clone(w.marks)
		w.mu.Unlock()
		for i := from; i < len(marks); i++ {
			if match(marks[i]) {
				return i, marks[i]
			}
		}
		from = max(from, len(marks))
		select {
		case <-w.poke:
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// passEndedAfter waits for mark kind k of path at from or later, then for
// the end of the pass it belongs to, and returns the index after that end.
func (w *passWatch) passEndedAfter(t *testing.T, what string, from int, k markKind, path string) int {
	t.Helper()
	i, _ := w.wait(t, what, from, func(m passMark) bool { return m.kind == k && m.path == path })
	j, _ := w.wait(t, "the end of the pass in which "+what, i+1, func(m passMark) bool { return m.kind == markEnded })
	return j + 1
}
