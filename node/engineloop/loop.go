package engineloop

import (
	"context"
	"sync"

	"github.com/weftsync/weft/protocol/engine"
)

// Loop is the one goroutine that owns a vault's reconcile engine
// (protocol/engine) while the agent runs (node's startVault runs Run).
// Everyone else hands it work: post for what needs no answer (paths touched by folded versions,
// a path settled or failed, an apply noted), do for what does (a pass, a
// decision, a scan's question, a read for status or the doctor). Work
// runs in the order it was handed over, so a read handed over after a post
// sees it, and posts made under the vault's lock (v.mu) run in the order
// of the changes they describe.
//
// The loop does no IO and waits for nothing but its queue: work that reads
// the graph or the index takes the vault's lock (node's v.mu) for as long
// as it runs, nothing else. A pass's carry-outs run on node's reconcile
// goroutine,
// which asks the loop for the pass and for each decision, so a status read
// never waits behind a file being written. (A scan does: a carry-out holds
// the scan lock while it writes, so that the watcher does not take its
// writes for local edits.)
//
// While no loop runs (a vault opening before Run, a node stopping), the
// caller runs work itself: do runs the queued work and its own, and post
// runs its work at once when nothing is queued. Work runs under exec
// whoever runs it, so the engine is never touched by two goroutines at
// once.
//
// Lock order: exec, then the vault's lock, then mu (a leaf). So Do must
// not be called with the vault's lock held (its work may need it), nor
// from work the loop runs; Post and Touch may be called with it held.
//
// The engine is created by New and reachable only through the work handed
// to the loop, so nothing else can touch it.
type Loop struct {
	eng  *engine.Engine // touched only by work, under exec
	exec sync.Mutex

	mu      sync.Mutex // guards the fields below
	queue   []engineWork
	running bool
	wake    chan struct{} // buffer 1: the queue has work
}

// engineWork is one piece of work: paths touched (many posts of one path
// coalesced into one item, so folding a log of 100,000 versions queues
// 16 bytes a path, not a closure each), or a function.
type engineWork struct {
	touched []string
	f       func(*engine.Engine)
}

// New returns a loop owning a new engine of cfg; until Run runs, callers
// run the work they hand over themselves.
func New(cfg engine.Config) *Loop {
	return &Loop{eng: engine.New(cfg), wake: make(chan struct{}, 1)}
}

// Run is the loop; it returns when ctx ends, after the work handed over
// before it stopped.
func (l *Loop) Run(ctx context.Context) {
	l.mu.Lock()
	l.running = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.running = false
		l.mu.Unlock()
		l.runQueued()
	}()
	for {
		l.runQueued()
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		}
	}
}

// runQueued runs the work queued so far, in order, under exec.
func (l *Loop) runQueued() {
	l.exec.Lock()
	defer l.exec.Unlock()
	l.runQueuedLocked()
}

// runQueuedLocked is runQueued with exec held.
func (l *Loop) runQueuedLocked() {
	for {
		l.mu.Lock()
		q := l.queue
		l.queue = nil
		l.mu.Unlock()
		if len(q) == 0 {
			return
		}
		for _, w := range q {
			if w.f != nil {
				w.f(l.eng)
				continue
			}
			for _, p := range w.touched {
				l.eng.Touch(p)
			}
		}
	}
}

// Post hands f to the loop and returns at once. f must not call Do or
// take the vault's lock: while no loop runs, it may run at once on the caller's
// goroutine, which often holds the vault's lock.
func (l *Loop) Post(f func(*engine.Engine)) {
	l.mu.Lock()
	if l.runHere() {
		f(l.eng)
		l.exec.Unlock()
		return
	}
	l.queue = append(l.queue, engineWork{f: f})
	l.mu.Unlock()
	l.signal()
}

// runHere reports whether work posted now may run at once on the
// caller's goroutine: no loop runs, nothing is queued, and nobody runs
// work. It is called with mu held; when it reports true it has taken exec
// and released mu, and the caller runs the work and releases exec. So a
// vault opening (which folds every version of its log, touching a path
// per version) queues nothing, and the order of work is kept: whatever is
// posted meanwhile is queued and runs after.
func (l *Loop) runHere() bool {
	if l.running || len(l.queue) > 0 || !l.exec.TryLock() {
		return false
	}
	l.mu.Unlock()
	return true
}

// Touch posts engine.Engine.Touch(path): the heads at path changed.
func (l *Loop) Touch(path string) {
	l.mu.Lock()
	if l.runHere() {
		l.eng.Touch(path)
		l.exec.Unlock()
		return
	}
	if n := len(l.queue); n > 0 && l.queue[n-1].f == nil {
		l.queue[n-1].touched = append(l.queue[n-1].touched, path)
	} else {
		l.queue = append(l.queue, engineWork{touched: []string{path}})
	}
	l.mu.Unlock()
	l.signal()
}

func (l *Loop) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Do runs f on the engine after everything handed over before it, and
// returns once f has run. The vault's lock must not be held.
func (l *Loop) Do(f func(*engine.Engine)) {
	l.mu.Lock()
	if !l.running {
		l.mu.Unlock()
		// No loop: run the queue and f here. If a loop starts meanwhile,
		// exec keeps the two apart, and the queue keeps the order.
		l.exec.Lock()
		defer l.exec.Unlock()
		l.runQueuedLocked()
		f(l.eng)
		return
	}
	done := make(chan struct{})
	l.queue = append(l.queue, engineWork{f: func(e *engine.Engine) {
		defer close(done)
		f(e)
	}})
	l.mu.Unlock()
	l.signal()
	<-done
}
