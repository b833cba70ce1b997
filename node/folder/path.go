package folder

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// WorkDir is weft's own working directory at the folder root. It and
// everything below it are never synced.
const WorkDir = ".weft"

// TempPrefix starts the name of every temporary file the applier writes.
// Names with this prefix are never synced, and leftover ones are removed at
// the node's start (Applier.RemoveTemps on the first scan's Result.Temps).
const TempPrefix = ".weft-tmp-"

// IgnoreFile is the ignore-rules file at the folder root (gitignore
// syntax). It is itself synced.
const IgnoreFile = ".weftignore"

const (
	maxPathLen = 4096
	maxNameLen = 255
)

// checkSyntax accepts a clean relative slash-separated path: no leading
// slash, no empty, "." or ".." component, no backslash, NUL or other
// control character, valid UTF-8, bounded length. It is the FS-level
// check; ValidPath adds the wire-level rules.
func checkSyntax(p string) error {
	if p == "" {
		return fmt.Errorf("%w: empty", ErrBadPath)
	}
	if len(p) > maxPathLen {
		return fmt.Errorf("%w: %d bytes long", ErrBadPath, len(p))
	}
	if p[0] == '/' {
		return fmt.Errorf("%w: %q is absolute", ErrBadPath, p)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("%w: %q is not UTF-8", ErrBadPath, p)
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return fmt.Errorf("%w: %q holds byte %#x", ErrBadPath, p, c)
		}
	}
	for c := range strings.SplitSeq(p, "/") {
		switch {
		case c == "":
			return fmt.Errorf("%w: %q has an empty component", ErrBadPath, p)
		case c == "." || c == "..":
			return fmt.Errorf("%w: %q has a %q component", ErrBadPath, p, c)
		case len(c) > maxNameLen:
			return fmt.Errorf("%w: %q has a component over %d bytes", ErrBadPath, p, maxNameLen)
		}
	}
	return nil
}

// ValidPath reports whether p may be synced: it passes checkSyntax, is in
// NFC, and is not internal (WorkDir or below, or a TempPrefix name). Every
// path that arrives from a peer must pass it before it reaches the
// Applier; the Applier checks again.
func ValidPath(p string) error {
	if err := checkSyntax(p); err != nil {
		return err
	}
	if !norm.NFC.IsNormalString(p) {
		return fmt.Errorf("%w: %q", ErrNotNFC, p)
	}
	if IsInternal(p) {
		return fmt.Errorf("%w: %q", ErrInternalPath, p)
	}
	return nil
}

// IsInternal reports whether p is WorkDir, below it, or has a component
// starting with TempPrefix.
func IsInternal(p string) bool {
	if p == WorkDir || strings.HasPrefix(p, WorkDir+"/") {
		return true
	}
	for c := range strings.SplitSeq(p, "/") {
		if strings.HasPrefix(c, TempPrefix) {
			return true
		}
	}
	return false
}

// splitPath returns the parent directory ("" for the root) and base name.
func splitPath(p string) (dir, base string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// joinPath joins a directory ("" for the root) and a name.
func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// Folding says how a file system compares names. On a plain Linux file
// system both are false: names are bytes.
type Folding struct {
	// CaseInsensitive: "A" and "a" name the same entry.
	CaseInsensitive bool
	// NormInsensitive: NFC and NFD forms name the same entry.
	NormInsensitive bool
}

// Key returns the form under which the file system compares name: NFC if
// normalisation-insensitive, then case-folded if case-insensitive. Two
// names with the same Key collide on this file system.
func (f Folding) Key(name string) string {
	if f.NormInsensitive {
		name = norm.NFC.String(name)
	}
	if f.CaseInsensitive {
		name = cases.Fold().String(name)
	}
	return name
}

// Folds reports whether the file system folds names at all.
func (f Folding) Folds() bool { return f.CaseInsensitive || f.NormInsensitive }
