package node

import (
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

// An editor's save made from the content before a peer's version was
// applied, landing right after the apply, must not replace the peer's
// version unseen: both edits survive (merged, or the peer's in a conflict
// copy). Before, the save superseded the version it never saw and the
// peer's edit was lost everywhere (issue 14, the token race). Later (past
// engine.ApplyRaceWindow) an edit is the user's edit of what they see, as usual.
func TestSaveRightAfterApplyKeepsBoth(t *testing.T) {
	for _, late := range []bool{false, true} {
		name := "right after"
		if late {
			name = "later"
		}
		t.Run(name, func(t *testing.T) {
			rs := newRaceSetup(t)
			clk, n, v, folderPath, p, base, xID, ctx := rs.clk, rs.n, rs.v, rs.folder, rs.path, rs.base, rs.xID, t.Context()

			h, id := joinAsMember(t, n)
			theirs := []byte(base + "token-from-peer\n")
			e, err := entry.New(entry.Config{Identity: id, Vault: v.id, Clock: 50, Keys: v.ek, Time: clk.Now().UnixMilli(), Rand: rand.Reader},
				&entry.Body{Versions: []entry.Version{{Path: "log.md", Kind: entry.KindFile, Mode: 0o644, MTime: clk.Now().UnixNano(),
					Size: uint64(len(theirs)), Inline: theirs, Hash: blake3.Sum256(theirs), Supersedes: []entry.VersionID{xID}}}})
			if err != nil {
				t.Fatal(err)
			}
			serveLog(h, v.id, []*entry.Entry{e}, nil)
			connectHost(t, h, n)
			waitFor(t, "the peer's version to be applied", func() bool {
				b, err := os.ReadFile(p)
				return err == nil && string(b) == string(theirs)
			})
			if late {
				clk.set(clk.Now().Add(engine.ApplyRaceWindow + time.Second))
			}
			// The editor read "line 0" before the apply; its save lands now.
			editorSave(t, p, base+"token-from-here\n")
			if err := n.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			all := func() string { return logContents(folderPath) }
			if late {
				if got := all(); strings.Contains(got, "token-from-peer") {
					t.Fatalf("an edit made %s after the apply kept the peer's version it replaced:\n%s", engine.ApplyRaceWindow+time.Second, got)
				}
				return
			}
			waitFor(t, "both edits to be in the folder", func() bool {
				got := all()
				return strings.Contains(got, "token-from-peer") && strings.Contains(got, "token-from-here")
			})
		})
	}
}

// The same race, with one more step between the apply and the save's
// scan: a version with the same content as the applied one arrives and
// takes its place in the index, with no write to disk (a peer's
// resolution that restates it, or an identical resolution recorded by
// the peer at the same time as this device's own, which outranks it).
// The editor's save was still made from the content before the apply.
// Before, that index-only change forgot the apply (noteAppliedLocked
// dropped the record, and supersedesForLocalChangeLocked no longer matched the
// index's version), so the save superseded the peer's content unseen and
// the peer's token was lost everywhere: the token race's remaining loss.
func TestSaveAfterApplyAndRestatementKeepsBoth(t *testing.T) {
	for _, identical := range []bool{false, true} {
		name := "restated"
		if identical {
			name = "identical concurrent version"
		}
		t.Run(name, func(t *testing.T) {
			rs := newRaceSetup(t)
			clk, n, v, folderPath, p, base, xID, ctx := rs.clk, rs.n, rs.v, rs.folder, rs.path, rs.base, rs.xID, t.Context()

			_, id := joinAsMember(t, n)
			theirs := []byte(base + "token-from-peer\n")
			mtime := clk.Now().UnixNano()
			a := entry.Version{Path: "log.md", Kind: entry.KindFile, Mode: 0o644, MTime: mtime,
				Size: uint64(len(theirs)), Inline: theirs, Hash: blake3.Sum256(theirs), Supersedes: []entry.VersionID{xID}}
			e1, err := entry.New(entry.Config{Identity: id, Vault: v.id, Clock: 50, Keys: v.ek, Time: clk.Now().UnixMilli(), Rand: rand.Reader},
				&entry.Body{Versions: []entry.Version{a}})
			if err != nil {
				t.Fatal(err)
			}
			if err := v.ingestEntry(e1.Bytes(), nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the peer's version to be applied", func() bool {
				b, err := os.ReadFile(p)
				return err == nil && string(b) == string(theirs)
			})

			// The same content again, superseding the applied version
			// (restated) or, with a later mtime so it outranks it,
			// concurrent with it (identical).
			r := a
			r.MTime = mtime + int64(time.Second)
			if !identical {
				r.Supersedes = []entry.VersionID{e1.VersionID(0)}
			}
			e2, err := entry.New(entry.Config{Identity: id, Vault: v.id, Prev: e1.Head(), Clock: 51, Keys: v.ek, Time: clk.Now().UnixMilli(), Rand: rand.Reader},
				&entry.Body{Versions: []entry.Version{r}})
			if err != nil {
				t.Fatal(err)
			}
			rID := e2.VersionID(0)
			if err := v.ingestEntry(e2.Bytes(), nil); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the index to take the same content under the new version", func() bool {
				v.mu.Lock()
				rec := v.index.Rec("log.md")
				v.mu.Unlock()
				return rec.Version == rID && !pathDirty(v, "log.md")
			})

			// The editor read "line 0" before the apply; its save lands now.
			editorSave(t, p, base+"token-from-here\n")
			if err := n.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			v.mu.Lock()
			heads := v.view.HeadIDs("log.md")
			v.mu.Unlock()
			if !slices.Contains(heads, rID) {
				t.Fatalf("heads of log.md after the save: %v; the peer's version %v was superseded by a save that never saw it", heads, rID)
			}
			waitFor(t, "both edits to be in the folder", func() bool {
				got := logContents(folderPath)
				return strings.Contains(got, "token-from-peer") && strings.Contains(got, "token-from-here")
			})
		})
	}
}

// raceSetup is a node whose folder holds log.md ("line 0"), recorded as xID.
type raceSetup struct {
	clk          *testClock
	n            *Node
	v            *vault
	folder, path string
	base         string
	xID          entry.VersionID
}

func newRaceSetup(t *testing.T) raceSetup {
	t.Helper()
	clk := &testClock{t: time.Now()} // invites are checked against real time
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true, Now: clk.Now})
	rs := raceSetup{clk: clk, n: n, v: n.vaultsNow()[0], folder: folderPath, path: filepath.Join(folderPath, "log.md"), base: "line 0\n"}
	if err := os.WriteFile(rs.path, []byte(rs.base), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(t.Context()); err != nil {
		t.Fatal(err)
	}
	rs.v.mu.Lock()
	rs.xID = rs.v.index.Rec("log.md").Version
	rs.v.mu.Unlock()
	return rs
}

// editorSave saves content at p as an editor does: a temporary file
// beside it, renamed over it.
func editorSave(t *testing.T, p, content string) {
	t.Helper()
	tmp := p + ".tmp-editor"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

// logContents is the content of log.md and its conflict copies, together.
func logContents(folderPath string) string {
	var sb strings.Builder
	ents, _ := os.ReadDir(folderPath)
	for _, de := range ents {
		if strings.HasPrefix(de.Name(), "log") {
			b, _ := os.ReadFile(filepath.Join(folderPath, de.Name()))
			sb.Write(b)
		}
	}
	return sb.String()
}

// A change that puts back exactly the bytes a peer's version just
// replaced (a conflict copy moved back onto its name, an undo) is the
// user's act on what they see, not a stale save: it supersedes the
// applied version and keeps the name. Taken for a stale save, it restated
// the older content concurrently with the peer's version, Resolve dropped
// it as outdated, and the moved-back content was gone everywhere
// (simulation S1 seed 3).
func TestPutBackRightAfterApplyWins(t *testing.T) {
	rs := newRaceSetup(t)
	clk, n, v, folderPath, p, base, xID, ctx := rs.clk, rs.n, rs.v, rs.folder, rs.path, rs.base, rs.xID, t.Context()

	h, id := joinAsMember(t, n)
	theirs := []byte(base + "token-from-peer\n")
	e, err := entry.New(entry.Config{Identity: id, Vault: v.id, Clock: 50, Keys: v.ek, Time: clk.Now().UnixMilli(), Rand: rand.Reader},
		&entry.Body{Versions: []entry.Version{{Path: "log.md", Kind: entry.KindFile, Mode: 0o644, MTime: clk.Now().UnixNano(),
			Size: uint64(len(theirs)), Inline: theirs, Hash: blake3.Sum256(theirs), Supersedes: []entry.VersionID{xID}}}})
	if err != nil {
		t.Fatal(err)
	}
	peerID := e.VersionID(0)
	serveLog(h, v.id, []*entry.Entry{e}, nil)
	connectHost(t, h, n)
	waitFor(t, "the peer's version to be applied", func() bool {
		b, err := os.ReadFile(p)
		return err == nil && string(b) == string(theirs)
	})
	editorSave(t, p, base) // exactly the bytes the apply replaced
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	rec := v.index.Rec("log.md")
	sup := v.view.Graph.Get
	v.mu.Unlock()
	got, ok := sup(rec.Version)
	if !ok || rec.Version == xID || rec.Version == peerID {
		t.Fatalf("the put-back content was not recorded as a new version: index %v", rec.Version)
	}
	if !slices.Contains(got.Supersedes, peerID) {
		t.Fatalf("the put-back version supersedes %v, not the applied version %v: it would be dropped as a stale restatement", got.Supersedes, peerID)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != base {
		t.Fatalf("log.md holds %q (%v), want the put-back %q", b, err, base)
	}
	if all := logContents(folderPath); all != base {
		t.Fatalf("log.md and its copies hold %q, want only the put-back content", all)
	}
}

// The race once more, with a version arriving between the apply and the
// save's scan that puts the content before the apply back (a user
// elsewhere moving a conflict copy of "line 0" back onto the path),
// before this device has applied it. The save was made from "line 0" as
// it was before the apply, so it supersedes what a change made then would
// have: the version there then, not the put-back this disk never held.
// Before, it superseded every head holding "line 0", the put-back too,
// and that content was gone from every device (simulation S1 seed 1,
// docs/simulation.md finding 14).
func TestSaveAfterApplyLeavesALaterPutBack(t *testing.T) {
	rs := newRaceSetup(t)
	clk, n, v, p, base, xID := rs.clk, rs.n, rs.v, rs.path, rs.base, rs.xID

	_, id := joinAsMember(t, n)
	theirs := []byte(base + "token-from-peer\n")
	a := entry.Version{Path: "log.md", Kind: entry.KindFile, Mode: 0o644, MTime: clk.Now().UnixNano(),
		Size: uint64(len(theirs)), Inline: theirs, Hash: blake3.Sum256(theirs), Supersedes: []entry.VersionID{xID}}
	e1, err := entry.New(entry.Config{Identity: id, Vault: v.id, Clock: 50, Keys: v.ek, Time: clk.Now().UnixMilli(), Rand: rand.Reader},
		&entry.Body{Versions: []entry.Version{a}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.ingestEntry(e1.Bytes(), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the peer's version to be applied", func() bool {
		b, err := os.ReadFile(p)
		return err == nil && string(b) == string(theirs)
	})
	waitFor(t, "the apply to be recorded", func() bool {
		v.mu.Lock()
		rec := v.index.Rec("log.md")
		v.mu.Unlock()
		return rec.Version == e1.VersionID(0) && !pathDirty(v, "log.md")
	})

	// The put-back, known but not applied: in the graph only, so nothing
	// reconciles the path before the scan below.
	back := a
	back.Inline, back.Size, back.Hash = []byte(base), uint64(len(base)), blake3.Sum256([]byte(base))
	back.Supersedes = []entry.VersionID{e1.VersionID(0)}
	putBack := entry.VersionID{Author: id.ID(), Seq: 2}
	v.mu.Lock()
	err = v.view.Graph.Add(engine.CoreVersion(putBack, 60, clk.Now().UnixMilli(), back))
	v.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}

	seq := v.db.Head(n.ID()).Seq
	editorSave(t, p, base+"token-from-here\n")
	if err := n.Scan(t.Context()); err != nil {
		t.Fatal(err)
	}
	es := entriesOf(t, v, n.ID(), seq+1)
	if len(es) != 1 {
		t.Fatalf("%d entries recorded for the save, want 1", len(es))
	}
	body, err := v.crypt.OpenBody(es[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(body.Versions) != 1 || body.Versions[0].Path != "log.md" {
		t.Fatalf("the save's entry holds %+v, want one version of log.md", body.Versions)
	}
	if got := body.Versions[0].Supersedes; !slices.Equal(got, []entry.VersionID{xID}) {
		t.Fatalf("the save supersedes %v, want only %v (the version before the apply), not the put-back %v", got, xID, putBack)
	}
}
