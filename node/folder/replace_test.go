package folder

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"unicode/utf8"
)

// plainFS hides a FS's AtomicReplacer methods: the applier then replaces
// with a plain Rename.
type plainFS struct{ FS }

// A user's save (write to a temp file, rename over the target) lands after
// the applier's last check and before its rename: Findings 5 of
// docs/simulation.md. The save must survive, the apply must report
// ErrLocalChange (the node then rescans and treats it as a conflict), and
// no temp file may stay. TestOnlyBeforeRename runs in exactly that window.
func TestApplyRacingLocalSave(t *testing.T) {
	for _, tc := range []struct {
		name  string
		old   string // "" : nothing at the target before the apply
		batch bool
	}{
		{"replace", "old", false},
		{"create", "", false},
		{"replace in a batch", "old", true},
		{"create in a batch", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachFS(t, func(t *testing.T, fsys FS) {
				const p = "docs/f0.txt"
				idx := MapIndex{}
				a := newApplier(t, fsys, idx, Folding{})
				mkdirs(t, fsys, "docs")
				if tc.old != "" {
					if _, err := writeVersion(t, a, idx, p, tc.old, false); err != nil {
						t.Fatal(err)
					}
				}
				a.cfg.TestOnlyBeforeRename = func(tmp, target string) error {
					put(t, fsys, target, "the user's save")
					return nil
				}
				var err error
				if tc.batch {
					res := a.WriteFiles(ctx, []FileWrite{{Version: FileVersion{Path: p, Size: 4, MTime: 1}, Content: strings.NewReader("new!")}})
					err = res[0].Err
				} else {
					_, err = writeVersion(t, a, idx, p, "new!", false)
				}
				if !errors.Is(err, ErrLocalChange) {
					t.Errorf("got error %v, want ErrLocalChange", err)
				}
				if got, _ := read(t, fsys, p); got != "the user's save" {
					t.Errorf("got %s = %q, want the user's save", p, got)
				}
				noTemps(t, fsys)
			})
		})
	}
}

// Without AtomicReplacer the applier falls back to Rename: a plain
// replace and a plain create still work, and leave no temp file.
func TestApplyWithoutAtomicReplace(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		pf := plainFS{fsys}
		if _, ok := FS(pf).(AtomicReplacer); ok {
			t.Fatal("plainFS should hide AtomicReplacer")
		}
		idx := MapIndex{}
		a := newApplier(t, pf, idx, Folding{})
		for _, c := range []string{"first", "second"} {
			if _, err := writeVersion(t, a, idx, "d/f", c, false); err != nil {
				t.Fatal(err)
			}
			if got, _ := read(t, fsys, "d/f"); got != c {
				t.Errorf("got %q, want %q", got, c)
			}
		}
		if _, err := a.Rename(ctx, "d/f", "d/g"); err != nil {
			t.Fatal(err)
		}
		noTemps(t, fsys)
	})
}

// Applier.Rename onto a name that a user's save took after the check
// refuses (RenameNoReplace) instead of overwriting it.
func TestApplyRenameRacingLocalSave(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		idx := MapIndex{}
		a := newApplier(t, fsys, idx, Folding{})
		if _, err := writeVersion(t, a, idx, "d/f", "moved", false); err != nil {
			t.Fatal(err)
		}
		// The race: the save lands between Rename's check and its move.
		// move is what Rename calls after the check.
		put(t, fsys, "d/g", "the user's save")
		err := a.move("d/f", "d/g", true)
		if !errors.Is(err, ErrLocalChange) {
			t.Errorf("got error %v, want ErrLocalChange", err)
		}
		if got, _ := read(t, fsys, "d/g"); got != "the user's save" {
			t.Errorf("got d/g = %q, want the user's save", got)
		}
	})
}

// MemFS's Exchange and RenameNoReplace follow renameat2(2): an exchange
// swaps the items and keeps both names; no-replace refuses an existing
// target and changes nothing.
func TestAtomicReplacerSemantics(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		ar, ok := fsys.(AtomicReplacer)
		if !ok {
			t.Skip("no AtomicReplacer")
		}
		put(t, fsys, "a", "A")
		put(t, fsys, "d/b", "B")
		if err := ar.Exchange("a", "d/b"); err != nil {
			t.Fatal(err)
		}
		ga, _ := read(t, fsys, "a")
		gb, _ := read(t, fsys, "d/b")
		if ga != "B" || gb != "A" {
			t.Errorf("after Exchange: got a=%q d/b=%q, want B and A", ga, gb)
		}
		if err := ar.RenameNoReplace("a", "d/b"); err == nil {
			t.Error("RenameNoReplace onto an existing name succeeded")
		}
		if err := ar.RenameNoReplace("a", "d/c"); err != nil {
			t.Fatal(err)
		}
		if got, ok := read(t, fsys, "d/c"); !ok || got != "B" {
			t.Errorf("got d/c = %q (present %v), want B", got, ok)
		}
		if _, ok := read(t, fsys, "a"); ok {
			t.Error("a still present after RenameNoReplace moved it")
		}
		if err := ar.Exchange("a", "d/c"); err == nil {
			t.Error("Exchange with a missing name succeeded")
		}
	})
}

// A save that lands between Delete's check and its removal must survive:
// the item is moved aside first, found not to be the one checked, and put
// back (on an FS without AtomicReplacer that window stays open; see
// docs/folder.md).
func TestDeleteRacingLocalSave(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		const p = "docs/f0.txt"
		idx := MapIndex{}
		a := newApplier(t, fsys, idx, Folding{})
		mkdirs(t, fsys, "docs")
		if _, err := writeVersion(t, a, idx, p, "old", false); err != nil {
			t.Fatal(err)
		}
		a.cfg.TestOnlyBeforeRemove = func(target string) { put(t, fsys, target, "the user's save") }
		if err := a.Delete(ctx, p); !errors.Is(err, ErrLocalChange) {
			t.Errorf("got error %v, want ErrLocalChange", err)
		}
		if got, _ := read(t, fsys, p); got != "the user's save" {
			t.Errorf("got %s = %q, want the user's save", p, got)
		}
		noTemps(t, fsys)

		// Unraced, the same Delete removes the file and leaves no temp.
		a.cfg.TestOnlyBeforeRemove = nil
		if err := fsys.Remove(p); err != nil {
			t.Fatal(err)
		}
		delete(idx, p)
		if _, err := writeVersion(t, a, idx, p, "newer", false); err != nil {
			t.Fatal(err)
		}
		if err := a.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := fsys.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("got %v after Delete, want ErrNotExist", err)
		}
		noTemps(t, fsys)
	})
}

// putBackFails is an FS whose rename of a temp name back to target fails,
// as a full or failing disk could make it: the step after which a user's
// item raced by a deletion sits under the applier's temp name.
type putBackFails struct {
	FS
	target *string // "" until the test arms it
}

func (f putBackFails) Exchange(a, b string) error { return f.FS.(AtomicReplacer).Exchange(a, b) }

func (f putBackFails) RenameNoReplace(from, to string) error {
	if _, name := splitPath(from); strings.HasPrefix(name, TempPrefix) && to == *f.target {
		return errors.New("injected: rename back failed")
	}
	return f.FS.(AtomicReplacer).RenameNoReplace(from, to)
}

// A user's item that a race left under the temp name, because putting it
// back failed, is moved to a visible name beside it (KeptName): every temp
// name is removed at the next start, so keeping it there would lose it.
func TestRacedItemKeptBeside(t *testing.T) {
	eachFS(t, func(t *testing.T, fsys FS) {
		const p = "docs/f0.txt"
		idx := MapIndex{}
		armed := ""
		a := newApplier(t, putBackFails{FS: fsys, target: &armed}, idx, Folding{})
		mkdirs(t, fsys, "docs")
		if _, err := writeVersion(t, a, idx, p, "old", false); err != nil {
			t.Fatal(err)
		}
		armed = p
		a.cfg.TestOnlyBeforeRemove = func(target string) { put(t, fsys, target, "the user's save") }
		err := a.Delete(ctx, p)
		if !errors.Is(err, ErrLocalChange) || errors.Is(err, errKeepTemp) {
			t.Fatalf("got error %v, want ErrLocalChange with the item kept beside", err)
		}
		var kept []string
		for _, q := range tree(t, fsys) {
			if strings.HasPrefix(q, "docs/f0.local-kept-") && strings.HasSuffix(q, ".txt") {
				kept = append(kept, q)
			}
		}
		if len(kept) != 1 {
			t.Fatalf("kept copies %q, want one docs/f0.local-kept-*.txt (tree %q)", kept, tree(t, fsys))
		}
		if got, _ := read(t, fsys, kept[0]); got != "the user's save" {
			t.Errorf("%s = %q, want the user's save", kept[0], got)
		}
		if !strings.Contains(err.Error(), kept[0]) {
			t.Errorf("the error %q does not say where the item is", err)
		}
		noTemps(t, fsys)
	})
}

// KeptName keeps the directory and the extension and stays a valid name:
// within 255 bytes, whole runes, however long the original.
func TestKeptName(t *testing.T) {
	if got := KeptName("docs/Readme.md", "1a2b3c4d5e6f"); got != "docs/Readme.local-kept-1a2b3c4d5e6f.md" {
		t.Errorf("KeptName = %q", got)
	}
	long := "d/" + strings.Repeat("é", 126) + ".txt" // 252 + 4 bytes
	got := KeptName(long, "1a2b3c4d5e6f")
	_, base := splitPath(got)
	if len(base) > 255 || !utf8.ValidString(base) || !strings.HasPrefix(got, "d/é") || !strings.HasSuffix(got, ".local-kept-1a2b3c4d5e6f.txt") {
		t.Errorf("KeptName of a long name = %q (%d bytes)", got, len(base))
	}
}
