package protocol

import (
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// conflictTimeLayout formats the loser's recorded mtime in conflict names.
const conflictTimeLayout = "20060102-150405"

// conflictHashBytes is how many leading bytes of the loser's content hash a
// conflict name carries (as lowercase hex).
const conflictHashBytes = 3

// ConflictName returns the name of the conflict copy of loser at path:
// the base name's stem, ".conflict-", the short ID of the loser's author
// (keys.DeviceID.Short), "-", the loser's recorded MTime in UTC as
// YYYYMMDD-HHMMSS, "-", the first three bytes of its content hash in
// lowercase hex, then "-n" when n > 1, then the extension:
//
//	notes/todo.md   -> notes/todo.conflict-AbCdEfGh-20261130-054657-1a2b3c.md
//	Makefile        -> Makefile.conflict-AbCdEfGh-20261130-054657-1a2b3c
//	.bashrc         -> .bashrc.conflict-AbCdEfGh-20261130-054657-1a2b3c
//	a.tar.gz, n = 2 -> a.tar.conflict-AbCdEfGh-20261130-054657-1a2b3c-2.gz
//
// The extension is the part of the base name from its last dot, unless that
// dot starts the name, so the copy still opens in the same application. The
// name uses only the loser's own recorded fields, never the local clock, so
// every device computes the same name.
//
// The content hash is what makes the name a function of the content: two
// different contents by one author in one second (an editor's autosave)
// get different names without a counter, so devices that see different
// sets of heads cannot hand one name to two contents (which would conflict
// again at the copy's name and spawn a copy of the copy). The counter n is
// left for names a user's own file already holds. Resolve passes the
// content's origin as loser (see Resolve), so a re-recorded content keeps
// its first author's name.
func ConflictName(path string, loser Version, n int) string {
	dir, base := "", path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		dir, base = path[:i+1], path[i+1:]
	}
	stem, ext := base, ""
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		stem, ext = base[:i], base[i:]
	}
	var b strings.Builder
	b.WriteString(dir)
	b.WriteString(stem)
	b.WriteString(".conflict-")
	b.WriteString(loser.ID.Author.Short())
	b.WriteByte('-')
	b.WriteString(time.Unix(0, loser.MTime).UTC().Format(conflictTimeLayout))
	b.WriteByte('-')
	b.WriteString(hex.EncodeToString(loser.ContentHash[:conflictHashBytes]))
	if n > 1 {
		b.WriteByte('-')
		b.WriteString(strconv.Itoa(n))
	}
	b.WriteString(ext)
	return b.String()
}

// NameUse says what a candidate conflict-copy name holds, as the replicated
// version graph sees it (never the local disk, so every device answers
// alike).
type NameUse uint8

const (
	// NameFree: no live head at the name (nothing, or only deletions).
	NameFree NameUse = iota
	// NameHolds: every live head at the name has the loser's content: the
	// copy already exists (recorded earlier by this or another device) and
	// is reused, not written again under a new name.
	NameHolds
	// NameTaken: some live head at the name holds other content.
	NameTaken
	// NameRemoved: a copy of the loser's content was made at the name and
	// a user has since deleted it or renamed it away (nothing live is
	// there). The loser is not copied again: the user already saw this
	// content as a conflict copy and dealt with it, and a device deciding
	// from a view that still had the loser as a head must not bring the
	// copy back (docs/simulation.md, finding 6).
	NameRemoved
)

func (u NameUse) String() string {
	switch u {
	case NameFree:
		return "free"
	case NameHolds:
		return "holds"
	case NameTaken:
		return "taken"
	case NameRemoved:
		return "removed"
	}
	return "nameuse(" + strconv.Itoa(int(u)) + ")"
}

// NameUseFunc answers what name holds for a loser whose origin is content
// (Resolve passes the loser's origin, which has the loser's kind and
// content hash). *Graph.NameUse is the implementation node/ uses.
type NameUseFunc func(name string, content Version) NameUse
