package engine

import (
	"maps"
	"slices"
	"time"

	"github.com/weftsync/weft/protocol"
)

// Engine is one vault's reconcile state as a state machine shaped like
// etcd raft's: the shell feeds it events (Step, Tick), asks it what to
// carry out (Ready, Decide) and says when a pass is done (Advance). It
// keeps which paths need a decision, which of them wait for history and
// since when, the error each unsettled path last met, how many of the
// current pass remain, the mass-delete guard and the saves racing an
// apply. It holds no lock, starts no goroutine, reads no clock and does
// no IO: the device (node) keeps one per vault, owned by the vault's
// engine loop goroutine (node/engineloop), and the
// deterministic simulation (simulation/detsim) one per simulated device,
// so both carry out one implementation of these rules.
//
// The version graph and the folder index stay with the shell; the engine
// reads them through a View at the calls that need them. A restart is a
// new Engine: none of this state is stored (what it would hold is derived
// again from the graph and the first scan).
//
// A pass, as the shell runs it:
//
//	rd := e.Ready(view)             // takes every dirty path, in order
//	for each path p of rd (Adds, Deletions, AfterDeletions):
//	        d, err := e.Decide(p, view)
//	        ... carry d out ...
//	        e.Step(Settled{p}) or e.Step(Failed{...})
//	e.Advance(rd)
type Engine struct {
	// Deletes is the mass-delete guard (DeleteGuard): Ready asks it which
	// incoming deletions to hold; the shell feeds it scans and the user's
	// decisions.
	Deletes DeleteGuard
	// Recent is the peers' versions applied in the last ApplyRaceWindow
	// (RecentApplies): the shell notes each apply and asks it about each
	// local change.
	Recent RecentApplies

	rules Rules
	fold  func(string) string
	now   time.Time

	dirty   map[string]struct{}
	waiting map[string]historyWait // paths whose heads await history
	errs    map[string]string      // path -> the error its last carry-out met
	inPass  int                    // paths of the current pass not settled yet
}

// Config is what an Engine is made with.
type Config struct {
	// Rules are the decisions the engine runs; zero is Default().
	Rules Rules
	// MassDelete is the guard's policy.
	MassDelete protocol.MassDeletePolicy
	// Fold maps a path to the key two names share when the folder treats
	// them as one (a case-insensitive file system); nil is the identity.
	Fold func(string) string
}

// New returns an engine with nothing to do.
func New(cfg Config) *Engine {
	fold := cfg.Fold
	if fold == nil {
		fold = func(p string) string { return p }
	}
	return &Engine{
		Deletes: DeleteGuard{Policy: cfg.MassDelete},
		rules:   cfg.Rules.OrDefault(),
		fold:    fold,
		dirty:   map[string]struct{}{},
		waiting: map[string]historyWait{},
		errs:    map[string]string{},
	}
}

// View is the vault's state as the engine reads it at one call: the
// version graph and the folder index (the guard's GuardIndex).
type View interface {
	GuardIndex
	Graph() *protocol.Graph
}

// Event is something that happened to the vault, fed to Step.
type Event interface{ isEvent() }

// Touched says the heads at Paths changed (versions folded in, a graph
// rebuilt, a held deletion accepted) or the folder at Paths must be made
// to match them again (a damaged file, a rejected deletion): each needs a
// decision.
type Touched struct{ Paths []string }

// Current says the folder already holds what each of Paths' heads say
// (this device authored the only head, or a restart found the index
// recording it): no decision is needed unless another event touches them.
type Current struct{ Paths []string }

// Settled says Path's decision was carried out: its error and its wait
// for history are over.
type Settled struct{ Path string }

// Failed says Path's decision was not carried out: it needs another
// decision on the next pass. Waiting failures (the path waits for
// history, a scan made the decision stale, the home disk is full) are
// not the path's error; any other Err becomes the error status shows for
// the path until it settles.
type Failed struct {
	Path    string
	Err     error
	Waiting bool
}

func (Touched) isEvent() {}
func (Current) isEvent() {}
func (Settled) isEvent() {}
func (Failed) isEvent()  {}

// Step feeds the engine one event.
func (e *Engine) Step(ev Event) {
	switch ev := ev.(type) {
	case Touched:
		for _, p := range ev.Paths {
			e.dirty[p] = struct{}{}
		}
	case Current:
		for _, p := range ev.Paths {
			delete(e.dirty, p)
		}
	case Settled:
		delete(e.errs, ev.Path)
		delete(e.waiting, ev.Path)
		e.inPass = max(0, e.inPass-1)
	case Failed:
		e.dirty[ev.Path] = struct{}{}
		if !ev.Waiting && ev.Err != nil {
			e.errs[ev.Path] = ev.Err.Error()
		}
	}
}

// Touch is Step(Touched{Paths: []string{path}}) without building an
// event: folding a log of 100,000 versions in touches every path once.
func (e *Engine) Touch(path string) { e.dirty[path] = struct{}{} }

// Reopened drops from the dirty set, after a restart folded the stored
// log in again (which touches every path), the paths whose folder index
// already records their one head, not a deletion: deciding such a path
// decides that head with no conflict copy or merge and finds it applied,
// so a restart reconciles only what the last run left undone, not every
// path held (100,000 paths took seconds to pass). A path with several
// heads, or whose one head is a deletion, stays dirty. Changes made on
// disk while the device was down are the first scan's to find.
//
// A shell that knows which paths a restart folded in may leave out of the
// dirty set those for which AtHead holds (judged on every core: it only
// reads v) instead of touching them all and calling Reopened; the result
// is the same.
func (e *Engine) Reopened(v View) {
	for p := range e.dirty {
		if AtHead(v, p) {
			delete(e.dirty, p)
		}
	}
	e.dirty = shrunk(e.dirty)
}

// AtHead reports whether v's folder index records path's one head, and
// that head is not a deletion: the rule by which Reopened leaves a path
// out of a restart's reconcile. It only reads v, so calls on several
// goroutines are safe while nothing changes v.
func AtHead(v View, path string) bool {
	rec, ok := v.Lookup(path)
	if !ok {
		return false
	}
	h, n := v.Graph().FirstHead(path)
	return n == 1 && h.Kind != protocol.KindDeletion && rec.Version == h.ID
}

// shrunk returns the set m in a map of its own size: a Go map keeps the
// room of its largest size, and a restart touches every path (100,000
// paths left 5.6 MB in an emptied dirty set).
func shrunk(m map[string]struct{}) map[string]struct{} {
	out := make(map[string]struct{}, len(m))
	for p := range m {
		out[p] = struct{}{}
	}
	return out
}

// Tick tells the engine the time: the device's clock, which waits for
// history are measured on. A clock that goes back does not end a wait
// early (WaitOver).
func (e *Engine) Tick(now time.Time) { e.now = now }

// Ready is one reconcile pass: the dirty paths in the order to carry them
// out (Plan), without the incoming deletions the mass-delete guard holds,
// and the guard's verdict on the pass's deletions (for the shell to tell
// the user when a hold began).
type Ready struct {
	Plan
	Guard IncomingVerdict
	// Withheld are the pass's deletions the guard holds (left out of
	// Plan).
	Withheld []string
}

// Trim lets go of what the engine keeps only for a while and no longer
// needs at now: applies past ApplyRaceWindow (RecentApplies.Trim) and move
// hashes past DeleteWindow (DeleteGuard.Trim). No decision depends on
// whether it ran; the shell calls it when the vault has been idle a while.
func (e *Engine) Trim(now time.Time) {
	e.Recent.Trim(now)
	e.Deletes.Trim(now)
}

// HasReady reports whether a pass has anything to do.
func (e *Engine) HasReady() bool { return len(e.dirty) > 0 }

// Ready takes every dirty path into a new pass: held incoming deletions
// that no longer stand are released, the guard judges the pass's
// deletions, and the rest is ordered by Order. A path the pass leaves
// unsettled is dirty again by its Failed event.
func (e *Engine) Ready(v View) Ready {
	paths := slices.Sorted(maps.Keys(e.dirty)) // the pass never depends on map order
	e.dirty = map[string]struct{}{}            // not clear: a cleared map keeps its largest room
	e.Deletes.Release(paths, v)
	g := v.Graph()
	arriving := Arriving(g, paths)
	dels := Deletions(g, paths)
	verdict := e.Deletes.JudgeIncoming(slices.Clone(dels), arriving, v, e.now)
	e.inPass = max(0, len(paths)-verdict.NewlyHeld)
	var withheld []string
	if len(verdict.Apply) < len(dels) {
		applied := make(map[string]struct{}, len(verdict.Apply))
		for _, p := range verdict.Apply {
			applied[p] = struct{}{}
		}
		for _, p := range dels {
			if _, ok := applied[p]; !ok {
				withheld = append(withheld, p)
			}
		}
	}
	return Ready{Plan: Order(paths, dels, verdict.Apply, e.fold), Guard: verdict, Withheld: withheld}
}

// Advance ends the pass rd: what it left unsettled is dirty again and
// counts as pending from now on.
func (e *Engine) Advance(Ready) { e.inPass = 0 }

// Act is what a decision asks of the shell.
type Act int

const (
	// ActNothing: the path has no heads; nothing to carry out.
	ActNothing Act = iota
	// ActWait: the path's heads supersede versions not here yet; it stays
	// dirty and is decided on a later pass (AwaitsHistory, WaitOver).
	ActWait
	// ActCarryOut: carry Decision out.
	ActCarryOut
)

// Decided is the engine's decision about one path.
type Decided struct {
	Act      Act
	Decision protocol.Decision
	// WaitBegan is set on the ActWait that starts a path's wait.
	WaitBegan bool
}

// historyWait is one path's wait for history: since when, and for which
// missing versions. A version missing that the wait was not for starts it
// again: it may link the heads too.
type historyWait struct {
	since   time.Time
	missing []protocol.VersionID
}

// Decide decides path on the state v shows: nothing to do, wait for
// history, or the decision of the rules (Resolve). A path that waits is
// dirty again. A wait that is over stays over while the same versions are
// missing, until the path settles (Settled) or no longer awaits history:
// a decision made stale by a local change and made again at once, or one
// whose carry-out failed, does not wait anew; a newly missing version
// starts it again. The shell calls Decide once per path of a pass, and
// again when a scan made a decision stale.
func (e *Engine) Decide(path string, v View) (Decided, error) {
	g := v.Graph()
	if len(g.Heads(path)) == 0 {
		return Decided{}, nil
	}
	var began bool
	if AwaitsHistory(g, path) {
		missing := g.Dangling(path)
		w, ok := e.waiting[path]
		if !ok || !within(missing, w.missing) {
			w, began = historyWait{since: e.now, missing: missing}, true
			e.waiting[path] = w
		}
		if !WaitOver(w.since, e.now) {
			e.dirty[path] = struct{}{}
			return Decided{Act: ActWait, WaitBegan: began}, nil
		}
	} else {
		delete(e.waiting, path)
	}
	dec, err := e.Resolve(path, v)
	if err != nil {
		return Decided{}, err
	}
	return Decided{Act: ActCarryOut, Decision: dec}, nil
}

// Resolve is the rules' decision of path's heads on the state v shows,
// conflict copies named from the graph so every device names them alike.
// It changes nothing in the engine: what the doctor shows of a path is
// what a pass would decide.
func (e *Engine) Resolve(path string, v View) (protocol.Decision, error) {
	g := v.Graph()
	cur, had := v.Lookup(path)
	return e.rules.Resolve(g, path, cur, had, g.NameUse)
}

// Supersedes is what a local change at path supersedes by the engine's
// rules (Rules.Supersedes, LocalSupersedes for the product), where the
// folder index holds d (when had), whatever applied it.
func (e *Engine) Supersedes(g *protocol.Graph, path string, d Disk, had bool) []protocol.VersionID {
	return e.rules.Supersedes(g, path, d, had)
}

// LocalChange returns what a local change of path to changed (Kind 0: a
// deletion) supersedes at now, where the index holds cur (when had):
// what the index gives (Supersedes), unless the change races a peer's
// version applied just before (RecentApplies.ForLocalChange), which
// raced reports; the change then meets that version as a concurrent
// edit.
func (e *Engine) LocalChange(g *protocol.Graph, path string, cur Disk, had bool, changed Disk, now time.Time) (sup []protocol.VersionID, raced bool) {
	if sup, raced := e.Recent.ForLocalChange(path, cur, had, changed, now); raced {
		return sup, true
	}
	return e.Supersedes(g, path, cur, had), false
}

// Applied notes that an apply at now replaced old (when had) at path
// with applied (RecentApplies.Applied), so a save racing it is told from
// an edit made after it.
func (e *Engine) Applied(g *protocol.Graph, path string, old Disk, had bool, applied Disk, now time.Time) {
	e.Recent.Applied(path, old, had, applied, now, func() []protocol.VersionID {
		return e.Supersedes(g, path, old, had)
	})
}

// IsDirty reports whether path waits for a decision.
func (e *Engine) IsDirty(path string) bool {
	_, ok := e.dirty[path]
	return ok
}

// DirtyPaths lists the paths waiting for a decision, in order.
func (e *Engine) DirtyPaths() []string { return slices.Sorted(maps.Keys(e.dirty)) }

// Pending is how many paths still need a decision carried out: the dirty
// ones, or the current pass's unsettled ones when they are more.
func (e *Engine) Pending() int { return max(len(e.dirty), e.inPass) }

// Err returns the error path's last carry-out met, if it has not settled
// since.
func (e *Engine) Err(path string) (string, bool) {
	s, ok := e.errs[path]
	return s, ok
}

// Errs calls fn for each path with an error, in path order.
func (e *Engine) Errs(fn func(path, err string)) {
	for _, p := range slices.Sorted(maps.Keys(e.errs)) {
		fn(p, e.errs[p])
	}
}

// Waiting reports whether path waits for history, and since when.
func (e *Engine) Waiting(path string) (time.Time, bool) {
	w, ok := e.waiting[path]
	return w.since, ok
}

// within reports whether every ID of a is in b.
func within(a, b []protocol.VersionID) bool {
	for _, id := range a {
		if !slices.Contains(b, id) {
			return false
		}
	}
	return true
}
