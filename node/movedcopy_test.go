package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftsync/weft/protocol/entry"
)

// A user moves a conflict copy back onto its file, and the scan that
// takes the file's new content runs before the copy's removal is seen
// (ScanPaths of the file alone, as a watcher batch that split the move's
// two events would). The copy's deletion must go into the same entry as
// the file's new version, so no device sees the one without the other
// (docs/simulation.md, finding 10).
func TestMovedBackCopyDeletedInSameEntry(t *testing.T) {
	n, folderPath := testNodeWith(t, Config{NoWatcher: true}) // the test's scans alone see the move
	v := n.vaultsNow()[0]
	ctx := context.Background()
	waitFor(t, "the initial scan", func() bool { // so no other scan runs below
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.scanned
	})
	file, cp := filepath.Join(folderPath, "notes.md"), filepath.Join(folderPath, "notes.conflict-AbCdEfGh-20261130-054657-1a2b3c.md")
	if err := os.WriteFile(file, []byte("winner\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp, []byte("loser\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cp, file); err != nil {
		t.Fatal(err)
	}
	self := n.id.ID()
	before := v.db.Head(self).Seq
	if _, err := v.scan(ctx, []string{"notes.md"}); err != nil {
		t.Fatal(err)
	}
	after := v.db.Head(self).Seq
	if after != before+1 {
		t.Fatalf("the scan wrote %d entries, want 1", after-before)
	}
	var got map[string]entry.Kind
	err := v.db.Range(self, after, after, func(e *entry.Entry) error {
		b, err := v.crypt.OpenBody(e)
		if err != nil {
			return err
		}
		got = map[string]entry.Kind{}
		for _, ver := range b.Versions {
			got[ver.Path] = ver.Kind
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]entry.Kind{"notes.md": entry.KindFile, filepath.Base(cp): entry.KindDeletion}
	if len(got) != len(want) || got["notes.md"] != want["notes.md"] || got[filepath.Base(cp)] != want[filepath.Base(cp)] {
		t.Errorf("the entry holds %v, want %v", got, want)
	}
}

// The loser's own device moves its copy back onto the file while its index
// still holds its own version there (the winner has not arrived or been
// applied): the file's content does not change. The move must still be
// recorded as a version of the file, restating the content, beside the
// copy's deletion: recorded as the deletion alone, nothing met the winner
// when it came, it replaced the file, and the content the user had put
// there was on no disk (docs/simulation.md, finding 13).
func TestMovedBackCopyOntoSameContentRecorded(t *testing.T) {
	n, folderPath := testNodeWith(t, Config{NoWatcher: true})
	v := n.vaultsNow()[0]
	ctx := context.Background()
	file, cp := filepath.Join(folderPath, "notes.md"), filepath.Join(folderPath, "notes.conflict-AbCdEfGh-20261130-054657-1a2b3c.md")
	if err := os.WriteFile(file, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	was := v.index.Rec("notes.md").Version
	v.mu.Unlock()
	if err := os.Rename(cp, file); err != nil {
		t.Fatal(err)
	}
	self := n.id.ID()
	before := v.db.Head(self).Seq
	if _, err := v.scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	after := v.db.Head(self).Seq
	if after != before+1 {
		t.Fatalf("the scan wrote %d entries, want 1", after-before)
	}
	var vers []entry.Version
	err := v.db.Range(self, after, after, func(e *entry.Entry) error {
		b, err := v.crypt.OpenBody(e)
		if err != nil {
			return err
		}
		vers = b.Versions
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var file1, del bool
	for _, ver := range vers {
		switch {
		case ver.Path == "notes.md" && ver.Kind == entry.KindFile:
			file1 = len(ver.Supersedes) == 1 && ver.Supersedes[0] == was
		case ver.Path == filepath.Base(cp) && ver.Kind == entry.KindDeletion:
			del = true
		}
	}
	if !file1 || !del {
		t.Fatalf("the entry holds %+v, want the copy's deletion and a version of notes.md superseding %v", vers, was)
	}
}

// The user deletes a copy that holds the file's content and an editor
// saves the file again unchanged before the next scan: that is no move
// (a rename keeps the copy's inode and mtime), and nothing but the
// copy's deletion is recorded. Taken for a move, the restating version
// was a put-back and the deleted copy came back when the winner arrived
// (review of bb102b5).
func TestDeletedCopyAndTouchedFileIsNoMove(t *testing.T) {
	n, folderPath := testNodeWith(t, Config{NoWatcher: true})
	v := n.vaultsNow()[0]
	ctx := context.Background()
	file, cp := filepath.Join(folderPath, "notes.md"), filepath.Join(folderPath, "notes.conflict-AbCdEfGh-20261130-054657-1a2b3c.md")
	for _, p := range []string{file, cp} {
		if err := os.WriteFile(p, []byte("mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v.scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cp); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(5 * time.Second)
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	self := n.id.ID()
	before := v.db.Head(self).Seq
	if _, err := v.scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := v.db.Range(self, before+1, v.db.Head(self).Seq, func(e *entry.Entry) error {
		b, err := v.crypt.OpenBody(e)
		if err != nil {
			return err
		}
		for _, ver := range b.Versions {
			got = append(got, ver.Path+" "+ver.Kind.String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != filepath.Base(cp)+" deletion" {
		t.Fatalf("recorded %v, want only the copy's deletion", got)
	}
}
