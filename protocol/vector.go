package protocol

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/weftsync/weft/protocol/keys"
)

// Vector is a version vector: for each author, the highest sequence number
// of that author's log held as a complete prefix. Sequence numbers start at
// 1, so 0 (or an absent author) means none of the author's log is held.
//
// A nil Vector is a valid empty vector for reading; Merge and Apply need a
// non-nil map. Vector is a plain map and is not safe for concurrent use.
type Vector map[keys.DeviceID]uint64

// Ordering is how two vectors relate.
type Ordering int8

const (
	Equal      Ordering = iota // both hold exactly the same entries
	Before                     // the left vector holds a strict subset of the right's entries
	After                      // the left vector holds a strict superset of the right's entries
	Concurrent                 // each holds entries the other lacks
)

func (o Ordering) String() string {
	switch o {
	case Equal:
		return "equal"
	case Before:
		return "before"
	case After:
		return "after"
	case Concurrent:
		return "concurrent"
	}
	return fmt.Sprintf("ordering(%d)", int8(o))
}

// Clone returns a copy of v that shares no memory with it, never nil.
func (v Vector) Clone() Vector {
	c := make(Vector, len(v))
	for a, s := range v {
		if s > 0 {
			c[a] = s
		}
	}
	return c
}

// Has reports whether v holds the entry (author, seq).
func (v Vector) Has(author keys.DeviceID, seq uint64) bool {
	return seq > 0 && seq <= v[author]
}

// Compare relates v to w. Absent authors count as 0.
func (v Vector) Compare(w Vector) Ordering {
	less, greater := false, false
	for a, s := range v {
		if t := w[a]; s > t {
			greater = true
		} else if s < t {
			less = true
		}
	}
	for a, t := range w {
		if _, ok := v[a]; !ok && t > 0 {
			less = true
		}
	}
	switch {
	case less && greater:
		return Concurrent
	case less:
		return Before
	case greater:
		return After
	}
	return Equal
}

// Merge raises v to hold everything w holds: v[a] = max(v[a], w[a]) for
// every author. v must not be nil.
func (v Vector) Merge(w Vector) {
	for a, t := range w {
		if t > v[a] {
			v[a] = t
		}
	}
}

// Range is a run of one author's log entries, From through To inclusive
// (1 <= From <= To).
type Range struct {
	Author   keys.DeviceID
	From, To uint64
}

func (r Range) String() string { return fmt.Sprintf("%s:%d-%d", r.Author.Short(), r.From, r.To) }

// Missing returns what a peer whose vector is peer lacks that v holds: for
// each author where v is ahead, the range of sequence numbers to send, in
// canonical author order (by bytes). Authors where the peer is ahead or equal
// are left out: the peer sends those the other way, from its own Missing.
//
// Applying every returned range to peer (Apply) makes it hold at least what
// v holds; the result equals the merge of the two vectors.
func (v Vector) Missing(peer Vector) []Range {
	var out []Range
	for a, s := range v {
		if t := peer[a]; s > t {
			out = append(out, Range{Author: a, From: t + 1, To: s})
		}
	}
	slices.SortFunc(out, func(x, y Range) int { return bytes.Compare(x.Author[:], y.Author[:]) })
	return out
}

// Apply records that the entries of r are now held. r must start right
// after what v holds for its author (r.From == v[r.Author]+1), or overlap
// it: a range that is already held in part is accepted and raises v to r.To.
// A range that would leave a gap returns an error wrapping ErrSequenceGap and
// leaves v unchanged. v must not be nil.
func (v Vector) Apply(r Range) error {
	if r.From == 0 || r.To < r.From {
		return fmt.Errorf("range %v: malformed: %w", r, ErrSequenceGap)
	}
	have := v[r.Author]
	if r.From > have+1 {
		return fmt.Errorf("range %v: holds only up to %d: %w", r, have, ErrSequenceGap)
	}
	if r.To > have {
		v[r.Author] = r.To
	}
	return nil
}
