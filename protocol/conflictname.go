package protocol

import (
	"strconv"
	"strings"
	"time"
)

// conflictTimeLayout formats the loser's recorded mtime in conflict names.
const conflictTimeLayout = "20060102-150405"

// ConflictName returns the name of the conflict copy of loser at path:
// the base name's stem, ".conflict-", the short ID of the loser's author
// (keys.DeviceID.Short), "-", the loser's recorded MTime in UTC as
// YYYYMMDD-HHMMSS, then "-n" when n > 1, then the extension:
//
//	notes/todo.md   -> notes/todo.conflict-AbCdEfGh-20261130-054657.md
//	Makefile        -> Makefile.conflict-AbCdEfGh-20261130-054657
//	.bashrc         -> .bashrc.conflict-AbCdEfGh-20261130-054657
//	a.tar.gz, n = 2 -> a.tar.conflict-AbCdEfGh-20261130-054657-2.gz
//
// The extension is the part of the base name from its last dot, unless that
// dot starts the name, so the copy still opens in the same application. The
// name uses only the loser's own recorded fields, never the local clock, so
// every device computes the same name.
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
	if n > 1 {
		b.WriteByte('-')
		b.WriteString(strconv.Itoa(n))
	}
	b.WriteString(ext)
	return b.String()
}
