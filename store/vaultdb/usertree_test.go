package vaultdb

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// userFolder makes a small synced folder beside a vault database, as a
// home lays them out (the database under the home, the folder elsewhere):
// files of several sizes, a nested directory, a symlink, an empty file.
func userFolder(t testing.TB, root string) string {
	t.Helper()
	folder := filepath.Join(root, "folder")
	files := map[string]string{
		"notes/a.md":         "alpha\n",
		"notes/deep/b.txt":   strings.Repeat("bravo ", 2000),
		"photos/c.jpg":       strings.Repeat("\xff\xd8charlie", 700),
		"empty":              "",
		".hidden/settings":   "x=1\n",
		"index/looks-like":   "a user directory named like the DB's", // same name as DB subdir
		"log/0000000001.seg": "not a segment: a user's file",
	}
	for p, content := range files {
		full := filepath.Join(folder, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("notes/a.md", filepath.Join(folder, "link")); err != nil {
		t.Fatal(err)
	}
	return folder
}

// treeState describes every file and directory under root that skip does
// not exclude: kind, mode and inode, and for files and symlinks size,
// mtime, ctime and content, so that any write, rename, chmod, touch or
// replacement shows as a change.
func treeState(t testing.TB, root string, skip func(rel string) bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if skip != nil && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		ino, ctime := inodeCtime(fi)
		desc := fmt.Sprintf("%v ino=%s", fi.Mode(), ino)
		if !fi.IsDir() {
			// A directory's times change with its entries, which are
			// compared one by one; a file's must not change at all.
			desc += fmt.Sprintf(" size=%d mtime=%d ctime=%s", fi.Size(), fi.ModTime().UnixNano(), ctime)
		}
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			desc += " sha256=" + hex.EncodeToString(sum[:])
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", root, err)
	}
	return out
}

// sameTree fails the test if two treeStates differ, naming what changed.
func sameTree(t testing.TB, what string, before, after map[string]string) {
	t.Helper()
	var diffs []string
	for _, p := range slices.Sorted(maps.Keys(before)) {
		switch a, ok := after[p]; {
		case !ok:
			diffs = append(diffs, "removed "+p)
		case a != before[p]:
			diffs = append(diffs, fmt.Sprintf("changed %s: %s -> %s", p, before[p], a))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[p]; !ok {
			diffs = append(diffs, "added "+p)
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("%s touched:\n%s", what, strings.Join(diffs, "\n"))
	}
}

// skipIndex returns a treeState filter that skips, under the vault DB
// directory db (relative to the walked root), the index and the
// directories a rebuild makes beside it. Everything else (the user's
// folder, the segments, the membership log, LOCK) must stay as it was.
func skipIndex(db string) func(rel string) bool {
	return func(rel string) bool {
		for _, d := range []string{"index", "index.old", "index.new"} {
			if rel == filepath.Join(db, d) || strings.HasPrefix(rel, filepath.Join(db, d)+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
}
