package node

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
)

// Three devices: A (the node) wrote f.txt (a1); C edited it (c1
// supersedes a1); B edited C's version (b1 supersedes c1). A peer streams
// B's log before C's (Missing ranges go in author order) and the node
// reconciles as soon as b1 is in: with c1 unknown, a1 and b1 look
// concurrent, and deciding then would write a conflict copy of the stale
// a1 and record a resolution entry, for edits that were strictly
// sequential. The path must wait for the history its heads name
// (engine.AwaitsHistory) and be decided once c1 is in: b1 alone, no copy,
// nothing authored.
//
// The node's clock stands still (Config.Now), so the wait
// (engine.DanglingWait) cannot run out while the test runs, however slow
// the machine: only c1's arrival ends it.
func TestReviewDanglingSupersedesMakeSpuriousConflict(t *testing.T) {
	clk := &testClock{t: time.Now()} // invites are checked against real time
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true, Now: clk.Now})
	v := n.vaultsNow()[0]
	a1 := writeScanned(t, v, folderPath, "f.txt", []byte("one\n"))
	self := n.id.ID()
	written := v.db.Head(self).Seq
	_, idC := joinAsMember(t, n)
	_, idB := joinAsMember(t, n)
	txt := func(s string, mtime int64, sup entry.VersionID) entry.Version {
		return entry.Version{Path: "f.txt", Kind: entry.KindFile, Mode: 0o644, MTime: mtime, Size: uint64(len(s)),
			Inline: []byte(s), Hash: blake3.Sum256([]byte(s)), Supersedes: []entry.VersionID{sup}}
	}
	now := clk.Now()
	ec := reviewMemberEntry(t, v, idC, []entry.Version{txt("one\ntwo\n", now.Add(time.Minute).UnixNano(), a1)})
	// B had seen c1: its clock is above C's.
	bContent := "one\ntwo\nthree\n"
	eb, err := entry.New(entry.Config{Identity: idB, Vault: v.id, Clock: ec.Clock() + 1, Keys: v.ek, Time: now.UnixMilli(), Rand: rand.Reader},
		&entry.Body{Versions: []entry.Version{txt(bContent, now.Add(2*time.Minute).UnixNano(), ec.VersionID(0))}})
	if err != nil {
		t.Fatal(err)
	}
	b1 := eb.VersionID(0)

	w := watchPasses(t, v)
	from := w.len()
	if err := v.ingestEntry(eb.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	// A pass looks at f.txt with b1 in and c1 missing: it must leave the
	// path waiting for history, not decide it.
	waiting := func() (ok bool) {
		v.engine.Do(func(e *engine.Engine) { _, ok = e.Waiting("f.txt") })
		return ok
	}
	_, m := w.wait(t, "a pass that saw f.txt with c1 missing", from, func(m passMark) bool {
		return m.kind == markDecided && m.path == "f.txt" || m.kind == markEnded && waiting()
	})
	if m.kind == markDecided {
		t.Fatal("f.txt was decided while c1, which links a1 to b1, was still missing")
	}
	v.mu.Lock()
	heads := v.view.HeadIDs("f.txt")
	v.mu.Unlock()
	dirty := pathDirty(v, "f.txt")
	if len(heads) != 2 || !dirty {
		t.Fatalf("while c1 is missing: heads of f.txt %v (want a1 and b1), dirty %v (want true)", heads, dirty)
	}

	from = w.len()
	if err := v.ingestEntry(ec.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	w.passEndedAfter(t, "f.txt is decided with c1 in", from, markDecided, "f.txt")

	got, err := os.ReadFile(filepath.Join(folderPath, "f.txt"))
	if err != nil || !bytes.Equal(got, []byte(bContent)) {
		t.Errorf("f.txt holds %q (%v), want b1's %q", got, err, bContent)
	}
	es, _ := os.ReadDir(folderPath)
	for _, e := range es {
		if strings.Contains(e.Name(), ".conflict-") {
			t.Errorf("spurious conflict copy %s for sequential edits a1 <- c1 <- b1", e.Name())
		}
	}
	if got := v.db.Head(self).Seq; got != written {
		t.Errorf("the node wrote %d entries, want %d (no resolution entry is due)", got, written)
	}
	v.mu.Lock()
	heads, index := v.view.HeadIDs("f.txt"), v.index.Rec("f.txt").Version
	v.mu.Unlock()
	if !slices.Equal(heads, []entry.VersionID{b1}) || index != b1 {
		t.Errorf("after c1: heads of f.txt %v, index %v; want b1 (%v) alone, applied", heads, index, b1)
	}
}
