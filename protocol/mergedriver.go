package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
)

// Merge drivers. A text file's concurrent versions are merged line by line
// (Merge3), except where its type has a structure lines do not see:
//
//   - JSON (.json): key by key, recursively (jsonmerge.go). Two devices
//     changing different keys of a settings file merge wherever the keys
//     sit, even on one line; a line merge could also join two additions
//     into invalid JSON, which this cannot.
//   - JSON Canvas (.canvas): as JSON, and the arrays of nodes and edges
//     element by element, by their ids.
//   - Markdown (.md, .markdown) with YAML frontmatter: the frontmatter key
//     by key, the body by lines (frontmatter.go).
//
// Where a driver finds both sides changed one value, the line merge is
// tried too (it merges changes to different lines of one multi-line
// value), and kept only when its result is still the type's, with no key
// twice (a key added at two places with different values would otherwise
// lose one).
// A file of one of these types that does not parse as that type (a JSON
// file with comments, a note without frontmatter) is merged by lines. Each
// driver is a pure function of its inputs and gives the same result with
// the two sides swapped, so every device merges alike.

// MergeFile merges sides of the file at path from base, pairwise in the
// order given, like MergeAll, with the driver for path's type. It returns
// the errors MergeAll returns (the same limits apply to every driver).
func MergeFile(p string, base []byte, sides [][]byte) (merged []byte, clean bool, err error) {
	drive := driverFor(p)
	if drive == nil {
		return MergeAll(base, sides)
	}
	if len(sides) < 2 {
		return MergeAll(base, sides)
	}
	acc := sides[0]
	for _, s := range sides[1:] {
		if bytes.Equal(acc, s) {
			continue // a merge of a with itself is a, byte for byte
		}
		acc, clean, err = drive(base, acc, s)
		if err != nil || !clean {
			return nil, false, err
		}
	}
	return acc, true, nil
}

type driver func(base, a, b []byte) ([]byte, bool, error)

// driverFor is the merge driver for the file at p, or nil for lines.
func driverFor(p string) driver {
	switch strings.ToLower(path.Ext(p)) {
	case ".json":
		return func(base, a, b []byte) ([]byte, bool, error) { return jsonOrLines(base, a, b, false) }
	case ".canvas":
		return func(base, a, b []byte) ([]byte, bool, error) { return jsonOrLines(base, a, b, true) }
	case ".md", ".markdown":
		return frontmatterOrLines
	}
	return nil
}

// checkMergeInputs applies Merge3's limits to a driver's inputs.
func checkMergeInputs(base, a, b []byte) error {
	for _, in := range []struct {
		name string
		b    []byte
	}{{"base", base}, {"first side", a}, {"second side", b}} {
		if len(in.b) > MaxMergeBytes {
			return fmt.Errorf("merging: %s is %d bytes, limit %d: %w", in.name, len(in.b), MaxMergeBytes, ErrMergeTooLarge)
		}
		if !IsText(in.b) {
			return fmt.Errorf("merging: %s: %w", in.name, ErrNotText)
		}
	}
	return nil
}

func jsonOrLines(base, a, b []byte, canvas bool) ([]byte, bool, error) {
	if err := checkMergeInputs(base, a, b); err != nil {
		return nil, false, err
	}
	merged, ok, err := mergeJSON(base, a, b, canvas)
	switch {
	case errors.Is(err, errNotJSON):
		return Merge3(base, a, b)
	case err != nil || ok:
		return merged, ok, err
	}
	// Both sides changed one value: lines still merge changes inside it
	// (two elements of a multi-line array), when the result is JSON.
	merged, ok, err = Merge3(base, a, b)
	if err != nil || !ok || !json.Valid(merged) || jsonDepth(merged) > maxJSONDepth || jsonDuplicateKeys(merged) {
		return nil, false, err
	}
	return merged, true, nil
}

func frontmatterOrLines(base, a, b []byte) ([]byte, bool, error) {
	if err := checkMergeInputs(base, a, b); err != nil {
		return nil, false, err
	}
	merged, clean, handled, err := mergeFrontmatter(base, a, b)
	if !handled {
		return Merge3(base, a, b) // not frontmatter on every side
	}
	if err != nil || clean {
		return merged, clean, err
	}
	// One key changed by both: lines may still merge it (two items of a
	// multi-line list), unless that writes a key twice (the same key added
	// at two places), which YAML refuses and which would lose a value.
	merged, clean, err = Merge3(base, a, b)
	if err != nil || !clean {
		return nil, false, err
	}
	if fm, _, ok := splitFrontmatter(merged); ok {
		if ms, ok := frontmatterMembers(fm); !ok || index(ms) == nil {
			return nil, false, nil
		}
	}
	return merged, true, nil
}
