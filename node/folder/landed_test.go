package folder

import (
	"strings"
	"testing"

	"lukechampine.com/blake3"
)

// A user's change lands right after the applier renamed its file onto the
// name and before it lstats the name for the index: docs/simulation.md,
// finding 11. The index must not describe the user's item as the applied
// version, or no scan would ever record the change and the next apply
// would replace it unseen: the next scan must report it.
func TestChangeRightAfterApplyIsScanned(t *testing.T) {
	const p = "docs/f4.txt"
	for _, tc := range []struct {
		name   string
		batch  bool
		change func(t *testing.T, fsys FS)
		want   string // the scan's change, "" for none
	}{
		{"untouched", false, nil, ""},
		{"untouched in a batch", true, nil, ""},
		{"saved by rename", false, func(t *testing.T, fsys FS) { put(t, fsys, p, "the user's save") }, "modified " + p},
		{"saved by rename in a batch", true, func(t *testing.T, fsys FS) { put(t, fsys, p, "the user's save") }, "modified " + p},
		{"appended in place", false, func(t *testing.T, fsys FS) { appendTo(t, fsys, p, " and more") }, "modified " + p},
		{"made executable", false, func(t *testing.T, fsys FS) {
			if err := fsys.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "modified " + p},
		{"deleted", true, func(t *testing.T, fsys FS) {
			if err := fsys.Remove(p); err != nil {
				t.Fatal(err)
			}
		}, "deleted " + p},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachFS(t, func(t *testing.T, fsys FS) {
				idx := MapIndex{}
				a := newApplier(t, fsys, idx, Folding{})
				mkdirs(t, fsys, "docs")
				if _, err := writeVersion(t, a, idx, p, "the peer's first", false); err != nil {
					t.Fatal(err)
				}
				scanInto(t, newScanner(t, fsys, idx), idx) // the directory, and the first's hash
				if tc.change != nil {
					a.cfg.TestOnlyAfterRename = func(string) { tc.change(t, fsys) }
				}
				const applied = "the peer's second version"
				v := FileVersion{Path: p, Size: int64(len(applied)), MTime: 1_600_000_001_000_000_000}
				var out Outcome
				var err error
				if tc.batch {
					r := a.WriteFiles(ctx, []FileWrite{{Version: v, Content: strings.NewReader(applied)}})
					out, err = r[0].Outcome, r[0].Err
				} else {
					out, err = a.WriteFile(ctx, v, strings.NewReader(applied))
				}
				if err != nil {
					t.Fatal(err)
				}
				rec := RecordOf(out.Path, out.Info)
				rec.Hash = blake3.Sum256([]byte(applied))
				idx.Put(rec)

				r := scanInto(t, newScanner(t, fsys, idx), idx)
				if got := strings.TrimSuffix(changes(r), "\n"); got != tc.want {
					t.Errorf("scan after the apply: got %q, want %q", got, tc.want)
				}
				if tc.want == "modified "+p {
					got, _ := read(t, fsys, p)
					if h := blake3.Sum256([]byte(got)); r.Changes[0].New.Hash != h {
						t.Errorf("recorded hash is not the hash of what is on disk (%q)", got)
					}
				}
				noTemps(t, fsys)
			})
		})
	}
}
