package entry

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ValidatePath reports whether p is a valid vault path, and if not, an error
// wrapping ErrBadPath that says why. A valid path:
//
//   - is relative to the folder root and slash-separated: no leading or
//     trailing "/", no empty, "." or ".." segment;
//   - is valid UTF-8 in Unicode Normalization Form C;
//   - holds no control character (Unicode category Cc: NUL, C0, DEL, C1) and
//     no backslash, which is a separator on Windows and would let a path
//     climb out of the folder there;
//   - is at most MaxPathLen bytes, each segment at most MaxSegmentLen.
//
// Non-NFC paths are rejected, not normalised: the body is signed, so
// normalising on decode would give one entry two readings and two devices
// could disagree about which name a version has. Writers normalise first
// (norm.NFC.String) — the scanner on a platform that stores NFD names (macOS)
// maps on-disk names to NFC before building a version.
//
// Names that are merely awkward on some platform (":" or "CON" on Windows,
// names differing only in case) are valid here; the applier resolves them.
func ValidatePath(p string) error {
	if p == "" {
		return fmt.Errorf("%w: empty", ErrBadPath)
	}
	if len(p) > MaxPathLen {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrBadPath, len(p), MaxPathLen)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrBadPath, p)
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: %q holds control character %U", ErrBadPath, p, r)
		}
		if r == '\\' {
			return fmt.Errorf("%w: %q holds a backslash", ErrBadPath, p)
		}
	}
	rest := p
	for {
		seg, tail, more := strings.Cut(rest, "/")
		switch {
		case seg == "":
			return fmt.Errorf("%w: %q has an empty segment", ErrBadPath, p)
		case seg == "." || seg == "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrBadPath, p, seg)
		case len(seg) > MaxSegmentLen:
			return fmt.Errorf("%w: segment of %d bytes, limit %d", ErrBadPath, len(seg), MaxSegmentLen)
		}
		if !more {
			break
		}
		rest = tail
	}
	if !norm.NFC.IsNormalString(p) {
		return fmt.Errorf("%w: %q is not in Unicode NFC", ErrBadPath, p)
	}
	return nil
}
