package vaultdb

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weftsync/weft/protocol/entry"
)

var (
	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("vault database closed")
	// ErrNotFound means no entry or record is stored under the key asked.
	ErrNotFound = errors.New("not found")
	// ErrCorrupt means stored bytes failed their checksum or no longer
	// decode to what the index says: they are never returned as data.
	ErrCorrupt = errors.New("stored data corrupt")
	// ErrBroken means an earlier index write failed and the index could
	// not be reopened yet; the DB refuses appends until it can. Each later
	// Append, Commit or AppendWith first reopens the index and indexes the
	// entries the failed write had made durable; a reopen of the DB does
	// the same.
	ErrBroken = errors.New("vault database needs reopening")
	// ErrLocked means another process has the vault database open.
	ErrLocked = errors.New("vault database in use")
	// ErrFork is wrapped by every *ForkError.
	ErrFork = errors.New("fork: two entries with one author and sequence")
	// ErrBadUpdate means an Update holds something invalid (a bad path, a
	// record that does not encode).
	ErrBadUpdate = errors.New("bad update")
)

// ForkError is what Append returns when an entry has the author and
// sequence number of a stored entry but a different CID. Proof holds both
// entries, verified. Nothing of that Append call was stored.
type ForkError struct {
	Proof *entry.ForkProof
}

func (e *ForkError) Error() string {
	return fmt.Sprintf("entry %s seq %d: %v", e.Proof.A.Author().Short(), e.Proof.A.Seq(), ErrFork)
}

// Unwrap makes errors.Is(err, ErrFork) true.
func (e *ForkError) Unwrap() error { return ErrFork }

// Damage is a byte range of a log file that failed its framing or checksum
// while records after it were still intact. Open skips it and reads on.
type Damage struct {
	File       string // path relative to the DB directory
	Start, End int64  // [Start, End) in bytes
}

func (d Damage) String() string { return fmt.Sprintf("%s[%d,%d)", d.File, d.Start, d.End) }

// CorruptionError lists the damaged ranges Open found in the logs. Open
// still succeeds; OpenReport.Err returns it so a caller can log it or show
// it. The entries in a damaged range, and any entry that no longer chains
// after them, are missing until peers send them again.
type CorruptionError struct {
	Ranges []Damage
}

func (e *CorruptionError) Error() string {
	parts := make([]string, len(e.Ranges))
	for i, d := range e.Ranges {
		parts[i] = d.String()
	}
	return "vault log damaged at " + strings.Join(parts, ", ") + ": " + ErrCorrupt.Error()
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptionError) Unwrap() error { return ErrCorrupt }
