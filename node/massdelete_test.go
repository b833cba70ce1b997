package node

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/engine"
	"github.com/weftsync/weft/protocol/entry"
)

// writeNotes writes n small notes into folder and returns their paths.
func writeNotes(t *testing.T, folder string, n int) []string {
	t.Helper()
	var out []string
	for i := range n {
		p := fmt.Sprintf("notes/n%03d.md", i)
		full := filepath.Join(folder, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("note "+p), 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// folderState is the state and error codes status reports for the node's
// one folder.
func folderState(n *Node) (string, []string) {
	st := n.Status()
	var codes []string
	for _, e := range st.Folders[0].Errors {
		if e.Code != "" {
			codes = append(codes, e.Code)
		}
	}
	return st.Folders[0].State, codes
}

// A scan that finds 180 of 200 files deleted records none of them: the
// folder is held with a mass-delete error until the user decides. Reject
// brings the files back from what the log holds; accept records the
// deletions.
func TestLocalMassDeleteIsHeld(t *testing.T) {
	for _, decision := range []string{"reject", "accept"} {
		t.Run(decision, func(t *testing.T) {
			ctx := context.Background()
			n, folderPath := testNodeWith(t, Config{NoWatcher: true})
			paths := writeNotes(t, folderPath, 200)
			if err := n.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			v := n.vaultsNow()[0]
			seq := v.db.Head(n.ID()).Seq
			for _, p := range paths[:180] {
				if err := os.Remove(filepath.Join(folderPath, p)); err != nil {
					t.Fatal(err)
				}
			}
			if err := n.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if got := v.db.Head(n.ID()).Seq; got != seq {
				t.Fatalf("a scan after deleting 180 of 200 files authored %d entries, want 0", got-seq)
			}
			if state, codes := folderState(n); state != "held" || !slices.Contains(codes, api.CodeMassDelete) {
				t.Fatalf("status: state %q, codes %v; want held with %s", state, codes, api.CodeMassDelete)
			}
			held := n.API().Deletions()
			if len(held) != 1 || held[0].Direction != "local" || held[0].Files != 180 {
				t.Fatalf("deletions: got %+v, want 180 local files", held)
			}
			// Another scan, and one more deletion by the watcher's path,
			// keep it held (and the new deletion joins the hold).
			if err := os.Remove(filepath.Join(folderPath, paths[190])); err != nil {
				t.Fatal(err)
			}
			if _, err := v.scan(ctx, []string{paths[190]}); err != nil {
				t.Fatal(err)
			}
			if err := n.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			if got := v.db.Head(n.ID()).Seq; got != seq {
				t.Fatalf("later scans authored %d entries while the deletion is held, want 0", got-seq)
			}
			if held := n.API().Deletions(); len(held) != 1 || held[0].Files != 181 {
				t.Fatalf("deletions after one more: got %+v, want 181 files", held)
			}

			res, err := n.API().DecideDeletions(ctx, api.DeletionsRequest{Action: decision})
			if err != nil {
				t.Fatal(err)
			}
			if res.Local != 181 || res.Incoming != 0 {
				t.Fatalf("%s: got %+v, want 181 local", decision, res)
			}
			if decision == "reject" {
				waitFor(t, "the deleted files to come back", func() bool {
					for _, p := range paths {
						if _, err := os.Stat(filepath.Join(folderPath, p)); err != nil {
							return false
						}
					}
					return true
				})
				if err := n.Scan(ctx); err != nil {
					t.Fatal(err)
				}
				if got := v.db.Head(n.ID()).Seq; got != seq {
					t.Errorf("rejecting authored %d entries; the files came back as the versions already recorded", got-seq)
				}
			} else {
				if got := v.db.Head(n.ID()).Seq; got <= seq {
					t.Fatalf("accepting authored nothing")
				}
				v.mu.Lock()
				files := v.index.Files()
				v.mu.Unlock()
				if files != 19 {
					t.Errorf("index holds %d files after accepting, want 19", files)
				}
				v.mu.Lock()
				confirmed := v.deletionConfirmedLocked(paths[0])
				v.mu.Unlock()
				if !confirmed {
					t.Error("an accepted deletion was recorded without entry.DeletionConfirmed: other devices would hold it again")
				}
			}
			waitFor(t, "the folder to leave the held state", func() bool {
				state, codes := folderState(n)
				return state == "in-sync" && len(codes) == 0
			})
			if held := n.API().Deletions(); len(held) != 0 {
				t.Errorf("deletions still held after %s: %+v", decision, held)
			}
		})
	}
}

// Deleting a few files, or most of a small folder, is an ordinary edit.
func TestSmallDeletionsGoThrough(t *testing.T) {
	ctx := context.Background()
	n, folderPath := testNodeWith(t, Config{NoWatcher: true})
	paths := writeNotes(t, folderPath, 20)
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	seq := v.db.Head(n.ID()).Seq
	for _, p := range paths {
		if err := os.Remove(filepath.Join(folderPath, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if got := v.db.Head(n.ID()).Seq; got != seq+1 {
		t.Fatalf("deleting all 20 files of a 20-file folder authored %d entries, want 1", got-seq)
	}
	if held := n.API().Deletions(); len(held) != 0 {
		t.Fatalf("held: %+v", held)
	}
}

// The guard can be turned off per folder, and the policy is kept across a
// restart of the vault's database.
func TestMassDeletePolicyOff(t *testing.T) {
	ctx := context.Background()
	n, folderPath := testNodeWith(t, Config{NoWatcher: true})
	paths := writeNotes(t, folderPath, 100)
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := n.API().SetMassDeletePolicy(folderPath, protocol.MassDeletePolicy{Off: true}); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	if p, err := loadMassDeletePolicy(v.db); err != nil || !p.Off {
		t.Fatalf("stored policy: %+v, %v; want off", p, err)
	}
	for _, p := range paths[:90] {
		if err := os.Remove(filepath.Join(folderPath, p)); err != nil {
			t.Fatal(err)
		}
	}
	seq := v.db.Head(n.ID()).Seq
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if got := v.db.Head(n.ID()).Seq; got != seq+1 {
		t.Fatalf("with the guard off, deleting 90 of 100 authored %d entries, want 1", got-seq)
	}
	if _, err := n.API().DecideDeletions(ctx, api.DeletionsRequest{Action: "accept"}); !errors.Is(err, errNothingHeld) {
		t.Fatalf("accept with nothing held: %v, want errNothingHeld", err)
	}
}

// A member whose entry deletes 27 of this device's 30 files (a broken or
// hostile device) gets nothing deleted here: the deletions are held.
// Rejecting them keeps the files and records versions that supersede the
// deletions; accepting applies them.
func TestIncomingMassDeleteIsHeld(t *testing.T) {
	for _, decision := range []string{"reject", "accept"} {
		t.Run(decision, func(t *testing.T) {
			ctx := context.Background()
			n, folderPath := testNodeWith(t, Config{NoWatcher: true})
			paths := writeNotes(t, folderPath, 30)
			if err := n.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			v := n.vaultsNow()[0]
			h, id := joinAsMember(t, n)
			var dels []entry.Version
			v.mu.Lock()
			for _, p := range paths[:27] {
				dels = append(dels, entry.Version{Path: p, Kind: entry.KindDeletion, Supersedes: []entry.VersionID{v.index.Rec(p).Version}})
			}
			v.mu.Unlock()
			e, err := entry.New(entry.Config{Identity: id, Vault: v.id, Clock: 100, Keys: v.ek, Time: 1, Rand: rand.Reader}, &entry.Body{Versions: dels})
			if err != nil {
				t.Fatal(err)
			}
			serveLog(h, v.id, []*entry.Entry{e}, nil)
			connectHost(t, h, n)
			waitFor(t, "the member's entry to be stored", func() bool { return v.db.Head(id.ID()).Seq == 1 })
			waitFor(t, "the deletions to be held", func() bool {
				state, codes := folderState(n)
				return state == "held" && slices.Contains(codes, api.CodeMassDelete)
			})
			for _, p := range paths {
				if _, err := os.Stat(filepath.Join(folderPath, p)); err != nil {
					t.Fatalf("%s deleted while the deletion is held: %v", p, err)
				}
			}
			held := n.API().Deletions()
			if len(held) != 1 || held[0].Direction != "incoming" || held[0].Files != 27 {
				t.Fatalf("deletions: got %+v, want 27 incoming files", held)
			}
			seq := v.db.Head(n.ID()).Seq
			res, err := n.API().DecideDeletions(ctx, api.DeletionsRequest{Folder: folderPath, Action: decision})
			if err != nil {
				t.Fatal(err)
			}
			if res.Incoming != 27 {
				t.Fatalf("%s: got %+v, want 27 incoming", decision, res)
			}
			if decision == "reject" {
				if got := v.db.Head(n.ID()).Seq; got <= seq {
					t.Fatal("rejecting recorded no new versions")
				}
				v.mu.Lock()
				for _, p := range paths[:27] {
					if engine.IsDeletion(v.view.Graph, p) {
						t.Errorf("%s: the deletion still wins after reject", p)
					}
				}
				v.mu.Unlock()
				if err := n.Scan(ctx); err != nil {
					t.Fatal(err)
				}
				for _, p := range paths {
					if _, err := os.Stat(filepath.Join(folderPath, p)); err != nil {
						t.Fatalf("%s gone after reject: %v", p, err)
					}
				}
			} else {
				waitFor(t, "the accepted deletions to be applied", func() bool {
					for _, p := range paths[:27] {
						if _, err := os.Stat(filepath.Join(folderPath, p)); err == nil {
							return false
						}
					}
					return true
				})
				for _, p := range paths[27:] {
					if _, err := os.Stat(filepath.Join(folderPath, p)); err != nil {
						t.Fatalf("%s, not deleted by the member, is gone: %v", p, err)
					}
				}
			}
			waitFor(t, "the folder to leave the held state", func() bool {
				state, _ := folderState(n)
				return state != "held"
			})
		})
	}
}

// A directory rename the watcher reports in two parts (the new paths
// first, the old ones in a later batch) is a move, not a mass deletion.
func TestSplitRenameIsNotHeld(t *testing.T) {
	ctx := context.Background()
	clk := &testClock{t: time.Now()}
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true, Now: clk.Now})
	writeNotes(t, folderPath, 40)
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	if err := os.Rename(filepath.Join(folderPath, "notes"), filepath.Join(folderPath, "renamed")); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scanAs(ctx, []string{"renamed"}, scanWatched); err != nil {
		t.Fatal(err)
	}
	if _, err := v.scanAs(ctx, []string{"notes"}, scanWatched); err != nil {
		t.Fatal(err)
	}
	if ps := v.deferredDeletions(); len(ps) != 0 {
		t.Fatalf("deferred deletions judged before they were quiet: %v", ps)
	}
	clk.set(clk.Now().Add(engine.DeletionQuiet))
	// The moved files' deletions went out with the scan (their content
	// was just recorded elsewhere); the old directory's waited.
	ps := v.deferredDeletions()
	if !slices.Equal(ps, []string{"notes"}) {
		t.Fatalf("deferred once quiet: %v, want the old directory", ps)
	}
	if _, err := v.scan(ctx, ps); err != nil { // the recheck
		t.Fatal(err)
	}
	if held := n.API().Deletions(); len(held) != 0 {
		t.Fatalf("a split rename was held: %+v", held)
	}
	v.mu.Lock()
	files := v.index.Files()
	v.mu.Unlock()
	if files != 40 {
		t.Fatalf("index holds %d files after the rename, want 40", files)
	}
}

// Peers' deletions held as a mass deletion are released once their
// content arrives at other paths: the author renamed, and its entries
// carried the deletions before the new paths.
func TestIncomingRenameReleasesHold(t *testing.T) {
	ctx := context.Background()
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true})
	paths := writeNotes(t, folderPath, 30)
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	if kept := judgeIncoming(v, paths[:27], nil); len(kept) != 0 {
		t.Fatalf("27 of 30 deleted: %d applied, want all held", len(kept))
	}
	if held := n.API().Deletions(); len(held) != 1 || held[0].Files != 27 {
		t.Fatalf("held: %+v", held)
	}
	arriving := map[[32]byte]string{}
	v.mu.Lock()
	for _, p := range paths[:27] {
		arriving[v.index.Rec(p).Hash] = "moved/" + p
	}
	v.mu.Unlock()
	kept := judgeIncoming(v, nil, arriving)
	if len(kept) != 27 {
		t.Fatalf("after the content arrived elsewhere: %d deletions released, want 27", len(kept))
	}
	if held := n.API().Deletions(); len(held) != 0 {
		t.Fatalf("still held: %+v", held)
	}
}

// judgeIncoming is what a reconcile pass's Ready asks the guard of
// dels, with arriving the contents of the pass's other paths: it returns
// the deletions to apply.
func judgeIncoming(v *vault, dels []string, arriving map[[32]byte]string) (apply []string) {
	v.engine.Do(func(e *engine.Engine) {
		v.mu.Lock()
		defer v.mu.Unlock()
		apply = e.Deletes.JudgeIncoming(dels, arriving, guardIndex{v}, v.now()).Apply
	})
	return apply
}

// An accept while this device may not author yet (it has heard from no
// peer since its start) is refused with the hold kept, instead of being
// spent with nothing recorded.
func TestAcceptRefusedWhileAuthoringHeld(t *testing.T) {
	ctx := context.Background()
	n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true})
	paths := writeNotes(t, folderPath, 40)
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	v := n.vaultsNow()[0]
	for _, p := range paths[:30] {
		if err := os.Remove(filepath.Join(folderPath, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if held := n.API().Deletions(); len(held) != 1 || held[0].Files != 30 {
		t.Fatalf("deletions: %+v, want 30 held", held)
	}
	v.tail.Decide(0, nil, true) // held, as while the membership log is damaged
	if _, err := n.API().DecideDeletions(ctx, api.DeletionsRequest{Action: "accept"}); !errors.Is(err, errAuthoringHeld) {
		t.Fatalf("accept while authoring is held: %v, want errAuthoringHeld", err)
	}
	if held := n.API().Deletions(); len(held) != 1 || held[0].Files != 30 {
		t.Fatalf("deletions after the refused accept: %+v, want the 30 still held", held)
	}
}
