package logview

import (
	"errors"

	"github.com/weftsync/weft/protocol/keys"
)

// Entries ahead of their author's head: an entry whose predecessor has not
// arrived yet (several peers stream to this device at once, each from
// where it is) is held back, checked authentic by the vault first, and
// taken once the gap fills.

// MaxAhead and MaxAheadBytes bound the entries held back. Beyond them an
// entry is refused with ErrTooFarAhead, which ends the stream; the peer
// resends it after reconnecting.
const (
	MaxAhead      = 4096
	MaxAheadBytes = 64 << 20
)

// ErrTooFarAhead refuses an entry past MaxAhead or MaxAheadBytes.
var ErrTooFarAhead = errors.New("too many entries ahead of their author's head")

// HoldBack keeps raw, the entry ref, until its author's earlier entries
// arrive. One already held back is kept once.
func (w *View) HoldBack(ref EntryRef, raw []byte) error {
	if w.ahead == nil {
		w.ahead = map[EntryRef][]byte{}
	}
	if _, ok := w.ahead[ref]; ok {
		return nil
	}
	if len(w.ahead) >= MaxAhead || w.aheadBytes+len(raw) > MaxAheadBytes {
		return ErrTooFarAhead
	}
	w.ahead[ref] = raw
	w.aheadBytes += len(raw)
	return nil
}

// TakeAhead returns and forgets the entry ref held back, if it is.
func (w *View) TakeAhead(ref EntryRef) ([]byte, bool) {
	raw, ok := w.ahead[ref]
	if ok {
		delete(w.ahead, ref)
		w.aheadBytes -= len(raw)
	}
	return raw, ok
}

// Ahead is how many entries are held back.
func (w *View) Ahead() int { return len(w.ahead) }

// FirstAhead is the lowest sequence of author's entries held back in
// (after, upto], or 0 when none is.
func (w *View) FirstAhead(author keys.DeviceID, after, upto uint64) uint64 {
	var first uint64
	for ref := range w.ahead {
		if ref.Author == author && ref.Seq > after && ref.Seq <= upto && (first == 0 || ref.Seq < first) {
			first = ref.Seq
		}
	}
	return first
}

// IsAhead reports whether entry ref is held back.
func (w *View) IsAhead(ref EntryRef) bool {
	_, ok := w.ahead[ref]
	return ok
}
