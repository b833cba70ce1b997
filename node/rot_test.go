package node

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
)

// flipByte changes one byte of a file in place and puts its mtime back, as
// a disk fault (or a program writing behind the user's back) would leave
// it.
func flipByte(t *testing.T, p string, at int64) {
	t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x20
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// A byte flipped in a file with its mtime put back is damage, not an
// edit: the scan records nothing for it, the damaged copy goes aside into
// .weft/corrupt/, and the recorded version is written again.
func TestRotIsRepairedNotRecorded(t *testing.T) {
	ctx := context.Background()
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true})
	want := []byte("the recorded content of a note, inline in the log")
	p := filepath.Join(folderPath, "note.md")
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	seq := v.db.Head(n.ID()).Seq
	flipByte(t, p, 5)
	evs, stop := n.Subscribe()
	defer stop()
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if got := v.db.Head(n.ID()).Seq; got != seq {
		t.Fatalf("the damaged file was recorded: %d entries authored, want 0", got-seq)
	}
	waitFor(t, "the damaged file to be written again", func() bool {
		b, err := os.ReadFile(p)
		return err == nil && bytes.Equal(b, want)
	})
	aside, _ := filepath.Glob(filepath.Join(folderPath, ".weft", "corrupt", "note.md~*"))
	if len(aside) != 1 {
		t.Fatalf("damaged copies kept aside: %v, want one", aside)
	}
	if b, _ := os.ReadFile(aside[0]); bytes.Equal(b, want) || len(b) != len(want) {
		t.Fatalf("the copy kept aside is not the damaged content: %q", b)
	}
	sawCorrupt := false
	for len(evs) > 0 {
		if ev := <-evs; ev.Type == api.EventCorrupt && ev.Path == "note.md" {
			sawCorrupt = true
		}
	}
	if !sawCorrupt {
		t.Error("no corrupt event")
	}
	waitFor(t, "the corrupt error to clear once repaired", func() bool {
		_, codes := folderState(n)
		return !slices.Contains(codes, api.CodeCorrupt)
	})
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if got := v.db.Head(n.ID()).Seq; got != seq {
		t.Fatalf("after the repair, %d entries authored, want 0", got-seq)
	}
}

// Rot that moves no metadata at all (a bad sector: not even the ctime) is
// invisible to scans; the scrub finds it by re-reading unchanged files.
func TestScrubFindsSilentRot(t *testing.T) {
	ctx := context.Background()
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true})
	// Written an hour ago: a file recorded within a timestamp tick of its
	// last write is never called rot (racyWindow).
	hourAgo := time.Now().Add(-time.Hour)
	for _, p := range writeNotes(t, folderPath, 10) {
		if err := os.Chtimes(filepath.Join(folderPath, filepath.FromSlash(p)), hourAgo, hourAgo); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	rel := "notes/n003.md"
	p := filepath.Join(folderPath, filepath.FromSlash(rel))
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, p, 2)
	// A disk's rot changes no ctime; the flip above did. Record the new
	// ctime as the index's, so only the content differs.
	info, err := v.fs.Lstat(rel)
	if err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	rec := v.index.Rec(rel)
	rec.Ctime = info.Ctime
	v.setIndexLocked(rel, rec)
	v.mu.Unlock()
	seq := v.db.Head(n.ID()).Seq
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); bytes.Equal(b, want) {
		t.Fatal("the scan found silent rot: the test did not make it silent")
	}
	res, err := n.API().Scrub(ctx, api.ScrubRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Files != 10 || !slices.Equal(res[0].Corrupt, []string{rel}) {
		t.Fatalf("scrub: got %+v, want 10 files verified and %s damaged", res, rel)
	}
	waitFor(t, "the damaged file to be written again", func() bool {
		b, err := os.ReadFile(p)
		return err == nil && bytes.Equal(b, want)
	})
	if got := v.db.Head(n.ID()).Seq; got != seq {
		t.Fatalf("%d entries authored for the damaged file, want 0", got-seq)
	}
	// A second pass finds nothing.
	res, err = n.API().Scrub(ctx, api.ScrubRequest{Path: folderPath})
	if err != nil {
		t.Fatal(err)
	}
	if len(res[0].Corrupt) != 0 {
		t.Fatalf("second scrub: %+v", res)
	}
}

// An edit keeps being an edit: a new mtime (or size) is recorded as
// usual.
func TestEditIsNotRot(t *testing.T) {
	ctx := context.Background()
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true})
	p := filepath.Join(folderPath, "note.md")
	if err := os.WriteFile(p, []byte("version one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	seq := v.db.Head(n.ID()).Seq
	if err := os.WriteFile(p, []byte("version two"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if got := v.db.Head(n.ID()).Seq; got != seq+1 {
		t.Fatalf("an edit authored %d entries, want 1", got-seq)
	}
	if ents, _ := os.ReadDir(filepath.Join(folderPath, folder.WorkDir, "corrupt")); len(ents) != 0 {
		t.Fatalf("an edit was taken for rot: %v", ents)
	}
}

// A file recorded right after its last write may have been written again
// in the same timestamp tick, unseen: the scrub does not call it rot (it
// would put back content older than the user's).
func TestScrubLeavesRacyRecords(t *testing.T) {
	ctx := context.Background()
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true})
	writeNotes(t, folderPath, 3)
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	rel := "notes/n001.md"
	p := filepath.Join(folderPath, filepath.FromSlash(rel))
	flipByte(t, p, 2)
	info, err := v.fs.Lstat(rel)
	if err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	rec := v.index.Rec(rel)
	rec.Ctime = info.Ctime // as if the write had moved no metadata
	v.setIndexLocked(rel, rec)
	v.mu.Unlock()
	changed, _ := os.ReadFile(p)
	res, err := n.API().Scrub(ctx, api.ScrubRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res[0].Corrupt) != 0 || res[0].Skipped != 1 {
		t.Fatalf("scrub of a racy record: %+v, want it skipped, nothing damaged", res)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, changed) {
		t.Fatal("the scrub replaced a file it could not call rot")
	}
}
