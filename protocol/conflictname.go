package protocol

import (
	"encoding/hex"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// conflictTimeLayout formats the loser's recorded mtime in conflict names.
const conflictTimeLayout = "20060102-150405"

// MaxNameBytes and MaxPathBytes are the longest path segment and path a
// version may name (entry.MaxSegmentLen and entry.MaxPathLen are these):
// most file systems refuse a name over 255 bytes. A conflict name is made
// to fit them.
const (
	MaxNameBytes = 255
	MaxPathBytes = 4096
	// maxKeptExt is the longest extension a shortened name keeps; a
	// longer one is shortened as part of the stem.
	maxKeptExt = 32
)

// conflictHashBytes is how many leading bytes of the loser's content hash a
// conflict name carries (as lowercase hex).
const conflictHashBytes = 3

// ConflictName returns the name of the conflict copy of loser at path:
// the base name's stem, ".conflict-", the loser's author's device name as
// its entry recorded it (Version.AuthorName, in the file-safe form of
// conflictNameTag) and "-" when it has one, the short ID of the loser's
// author (keys.DeviceID.Short), "-", the loser's recorded MTime in UTC as
// YYYYMMDD-HHMMSS, "-", the first three bytes of its content hash in
// lowercase hex, then "-n" when n > 1, then the extension:
//
//	notes/todo.md   -> notes/todo.conflict-AbCdEfGh-20261130-054657-1a2b3c.md
//	  by "Zoë's phone" notes/todo.conflict-Zoë_s_phone-AbCdEfGh-20261130-054657-1a2b3c.md
//	Makefile        -> Makefile.conflict-AbCdEfGh-20261130-054657-1a2b3c
//	.bashrc         -> .bashrc.conflict-AbCdEfGh-20261130-054657-1a2b3c
//	a.tar.gz, n = 2 -> a.tar.conflict-AbCdEfGh-20261130-054657-1a2b3c-2.gz
//
// The name says to a person which device's edit the copy holds; the short
// ID stays beside it because names need not be unique. The name is the
// one signed into the loser's own entry, never the membership's current
// one, so a rename later does not change a copy's name.
//
// The extension is the part of the base name from its last dot, unless that
// dot starts the name, so the copy still opens in the same application. The
// name uses only the loser's own recorded fields, never the local clock, so
// every device computes the same name.
//
// A name that would pass 255 bytes (or a path that would pass 4096) is
// shortened the same way on every device: the stem is cut at a UTF-8
// character boundary until it fits, keeping the suffix and the extension
// (an extension over 32 bytes is cut as part of the stem instead). Before,
// the copy of a note with a long name could not be written, and both
// devices stayed syncing for good. The suffix itself is never cut (two
// contents would then share a name), so a path within about 75 bytes of
// 4096 still gets a copy name too long to write.
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
	var suffix strings.Builder
	suffix.WriteString(".conflict-")
	if name := conflictNameTag(loser.AuthorName); name != "" {
		suffix.WriteString(name)
		suffix.WriteByte('-')
	}
	suffix.WriteString(loser.ID.Author.Short())
	suffix.WriteByte('-')
	suffix.WriteString(time.Unix(0, loser.MTime).UTC().Format(conflictTimeLayout))
	suffix.WriteByte('-')
	suffix.WriteString(hex.EncodeToString(loser.ContentHash[:conflictHashBytes]))
	if n > 1 {
		suffix.WriteByte('-')
		suffix.WriteString(strconv.Itoa(n))
	}
	limit := min(MaxNameBytes, MaxPathBytes-len(dir))
	if len(stem)+suffix.Len()+len(ext) > limit {
		if len(ext) > maxKeptExt {
			stem, ext = base, ""
		}
		stem = cutUTF8(stem, limit-suffix.Len()-len(ext))
	}
	return dir + stem + suffix.String() + ext
}

// maxNameTag bounds the device name a conflict copy's name carries, in
// bytes.
const maxNameTag = 24

// conflictNameTag is the form of a device name a conflict copy's name
// carries: NFC, letters and digits kept, every other run of characters
// (spaces, punctuation, '-', '.', '/', marks, symbols) one '_', no '_' at
// either end, cut to maxNameTag bytes at a character boundary. It holds
// nothing a file system or ParseConflictName treats specially, and it is a
// function of the name alone, so every device makes the same tag. "" when
// nothing is left.
func conflictNameTag(name string) string {
	if name == "" {
		return ""
	}
	var b strings.Builder
	gap := false
	for _, r := range norm.NFC.String(name) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			gap = false
			b.WriteRune(r)
			continue
		}
		gap = true
	}
	return strings.TrimRight(cutUTF8(b.String(), maxNameTag), "_")
}

// cutUTF8 returns the longest prefix of s of at most n bytes that ends at
// a character boundary.
func cutUTF8(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
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

// ConflictOrigin is what a conflict copy's name (ConflictName) says of the
// content it holds.
type ConflictOrigin struct {
	// Of is the path the copy was made beside, "" when the name was
	// shortened to fit (its stem is then cut) and so cannot say.
	Of string
	// Author is the short ID (keys.DeviceID.Short) of the device that
	// wrote the content, MTime its recorded modification time (UTC, to the
	// second).
	Author string
	MTime  time.Time
	// Name is the device name tag the copy's name carries (conflictNameTag
	// of the author's name when it wrote the content), "" when it has none.
	Name string
}

// IsConflictCopy reports whether p is named like a conflict copy
// (ConflictName): its base name holds ".conflict-".
func IsConflictCopy(p string) bool {
	return strings.Contains(p[strings.LastIndexByte(p, '/')+1:], ".conflict-")
}

// ParseConflictName reads a path named by ConflictName. ok is false for a
// path that is not such a name. A copy of a copy is read by its last
// suffix: Of is then the first copy.
func ParseConflictName(p string) (o ConflictOrigin, ok bool) {
	dir, base := "", p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		dir, base = p[:i+1], p[i+1:]
	}
	i := strings.LastIndex(base, ".conflict-")
	if i <= 0 {
		return o, false
	}
	stem, rest := base[:i], base[i+len(".conflict-"):]
	// [NAME-]AUTHOR-YYYYMMDD-HHMMSS-HASH6[-n][.ext]: read without a name
	// first, then with one (a name tag holds no '-', conflictNameTag).
	o, tail, ok := parseConflictSuffix(rest)
	if !ok {
		name, after, cut := strings.Cut(rest, "-")
		if !cut || name == "" || strings.ContainsAny(name, "./") {
			return o, false
		}
		if o, tail, ok = parseConflictSuffix(after); !ok {
			return o, false
		}
		o.Name = name
	}
	o.Of = dir + stem + tail
	if len(base) >= MaxNameBytes-4 || len(p) >= MaxPathBytes-4 {
		o.Of = "" // maybe shortened: the stem may be cut
	}
	return o, true
}

// parseConflictSuffix reads AUTHOR-YYYYMMDD-HHMMSS-HASH6[-n][.ext] and
// returns the author and time, and the extension part (tail).
func parseConflictSuffix(rest string) (o ConflictOrigin, tail string, ok bool) {
	parts := strings.SplitN(rest, "-", 4)
	if len(parts) != 4 || parts[0] == "" || strings.ContainsAny(parts[0], "./") {
		return o, "", false
	}
	if len(parts[1]) != 8 || len(parts[2]) != 6 {
		return o, "", false
	}
	t, err := time.Parse(conflictTimeLayout, parts[1]+"-"+parts[2])
	if err != nil {
		return o, "", false
	}
	tail = parts[3] // HASH6[-n][.ext]
	if len(tail) < 2*conflictHashBytes {
		return o, "", false
	}
	if _, err := hex.DecodeString(tail[:2*conflictHashBytes]); err != nil {
		return o, "", false
	}
	tail = tail[2*conflictHashBytes:]
	if strings.HasPrefix(tail, "-") {
		j := 1
		for j < len(tail) && tail[j] >= '0' && tail[j] <= '9' {
			j++
		}
		if j == 1 {
			return o, "", false
		}
		tail = tail[j:]
	}
	if tail != "" && !strings.HasPrefix(tail, ".") {
		return o, "", false
	}
	return ConflictOrigin{Author: parts[0], MTime: t.UTC()}, tail, true
}
