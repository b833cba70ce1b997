package relay

import (
	"time"

	"github.com/weftsync/weft/protocol/entry"
)

// Retention says which superseded file versions a relay keeps the chunks
// of. A relay holds no key, so it judges versions by their public headers
// alone: the versions each one supersedes, and the superseding entry's
// time (the author's claim, unix ms). A version is retained if
//
//  1. no version in an entry the relay holds supersedes it: it is a
//     current head (or its replacement is not here in full yet);
//  2. it was superseded less than KeepAll ago; or
//  3. it was superseded less than Daily ago, and it is the newest version
//     superseded on that UTC calendar day within its lineage.
//
// "Superseded at" is the latest time among the entries that supersede the
// version (several do when devices edited it concurrently: it stayed
// current on one of them until the last). A lineage is a connected
// component of the supersedes graph: a version and what it supersedes are
// one file's history. docs/relay.md ("Retention and garbage collection")
// explains what the relay can and cannot know.
//
// The zero Retention means DefaultRetention. Otherwise a field that is
// zero or negative turns that window off: Retention{KeepAll: -1, Daily: -1}
// keeps current heads only.
type Retention struct {
	// KeepAll keeps every version superseded less than KeepAll ago.
	KeepAll time.Duration
	// Daily keeps, per lineage and UTC day, the newest version superseded
	// on that day, for versions superseded less than Daily ago (measured
	// like KeepAll, from the supersession, not from the end of KeepAll).
	Daily time.Duration
}

// DefaultRetention keeps every version for 30 days after it was
// superseded, then one a day for a year.
var DefaultRetention = Retention{KeepAll: 30 * 24 * time.Hour, Daily: 365 * 24 * time.Hour}

// normalized fills the default and turns negative windows into 0 (off).
func (p Retention) normalized() Retention {
	if p == (Retention{}) {
		return DefaultRetention
	}
	return Retention{KeepAll: max(p.KeepAll, 0), Daily: max(p.Daily, 0)}
}

const msPerDay = 24 * 60 * 60 * 1000

// planNode is one version in the supersedes graph: a stored version, or a
// version only named by a stored version's supersedes list.
type planNode struct {
	id     entry.VersionID
	parent int32 // union-find over supersedes edges: the lineage

	stored bool   // its entry is stored
	held   bool   // its entry is in the held prefix
	clock  uint64 // its entry's Lamport clock

	superseded bool  // a stored version supersedes it
	heldSuper  bool  // a version in a held entry supersedes it
	at         int64 // latest time (ms) among the entries superseding it

	keep bool // the decision, valid after finish
}

// plan decides retention over one vault's stored versions. Feed it every
// stored version with add (in any order), call finish, then ask retained.
// It is pure: the clock comes in as nowMs. It is not safe for concurrent
// use.
type plan struct {
	pol   Retention // normalized
	nowMs int64
	index map[entry.VersionID]int32
	nodes []planNode
	done  bool
}

// planStats counts a finished plan's stored versions by outcome.
type planStats struct {
	Versions int // stored versions
	Heads    int // retained under rule 1 (not superseded by a held entry)
	KeptAll  int // retained under rule 2 only
	KeptDay  int // retained under rule 3 only
	Expired  int // not retained
}

func newPlan(pol Retention, now time.Time) *plan {
	return &plan{pol: pol.normalized(), nowMs: now.UnixMilli(), index: map[entry.VersionID]int32{}}
}

func (p *plan) node(id entry.VersionID) int32 {
	if i, ok := p.index[id]; ok {
		return i
	}
	i := int32(len(p.nodes))
	p.nodes = append(p.nodes, planNode{id: id, parent: i})
	p.index[id] = i
	return i
}

func (p *plan) root(i int32) int32 {
	for p.nodes[i].parent != i {
		p.nodes[i].parent = p.nodes[p.nodes[i].parent].parent // path halving
		i = p.nodes[i].parent
	}
	return i
}

func (p *plan) union(a, b int32) {
	ra, rb := p.root(a), p.root(b)
	if ra != rb {
		p.nodes[max(ra, rb)].parent = min(ra, rb)
	}
}

// add records stored version id, from an entry written at timeMs with
// Lamport clock clock, held or not, that supersedes sup.
func (p *plan) add(id entry.VersionID, timeMs int64, clock uint64, held bool, sup []entry.VersionID) {
	if p.done {
		panic("relay: invariant: plan.add after finish")
	}
	i := p.node(id)
	n := &p.nodes[i]
	n.stored, n.held, n.clock = true, held, clock
	for _, s := range sup {
		j := p.node(s)
		m := &p.nodes[j]
		if !m.superseded || timeMs > m.at {
			m.at = timeMs
		}
		m.superseded = true
		m.heldSuper = m.heldSuper || held
		p.union(i, j)
	}
}

// newer reports whether a is the newer of two versions superseded on one
// day: superseded later, else written later (Lamport clock), else the
// larger ID, so that every relay picks the same one.
func (p *plan) newer(a, b int32) bool {
	na, nb := &p.nodes[a], &p.nodes[b]
	if na.at != nb.at {
		return na.at > nb.at
	}
	if na.clock != nb.clock {
		return na.clock > nb.clock
	}
	return na.id.Compare(nb.id) > 0
}

// finish decides every stored version and returns the counts.
func (p *plan) finish() planStats {
	p.done = true
	keepAll, daily := p.pol.KeepAll.Milliseconds(), p.pol.Daily.Milliseconds()
	type dayKey struct {
		lineage int32
		day     int64
	}
	best := map[dayKey]int32{}
	var st planStats
	for i := range p.nodes {
		n := &p.nodes[i]
		if !n.stored {
			continue
		}
		st.Versions++
		if !n.held || !n.heldSuper {
			n.keep = true
			st.Heads++
			continue
		}
		age := p.nowMs - n.at
		if keepAll > 0 && age < keepAll {
			n.keep = true
			st.KeptAll++
		}
		if daily > 0 && age < daily {
			k := dayKey{p.root(int32(i)), floorDiv(n.at, msPerDay)}
			if b, ok := best[k]; !ok || p.newer(int32(i), b) {
				best[k] = int32(i)
			}
		}
	}
	for _, i := range best {
		if n := &p.nodes[i]; !n.keep {
			n.keep = true
			st.KeptDay++
		}
	}
	st.Expired = st.Versions - st.Heads - st.KeptAll - st.KeptDay
	return st
}

// retained reports whether stored version id is retained. A version the
// plan never saw stored is not (it references nothing here).
func (p *plan) retained(id entry.VersionID) bool {
	if !p.done {
		panic("relay: invariant: plan.retained before finish")
	}
	i, ok := p.index[id]
	return ok && p.nodes[i].keep
}

// floorDiv is a / b rounded toward negative infinity (b > 0), so that
// times before 1970 still fall on whole days.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
