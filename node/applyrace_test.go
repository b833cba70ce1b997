package node

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/entry"
)

// An editor's save made from the content before a peer's version was
// applied, landing right after the apply, must not replace the peer's
// version unseen: both edits survive (merged, or the peer's in a conflict
// copy). Before, the save superseded the version it never saw and the
// peer's edit was lost everywhere (issue 14, the token race). Later (past
// applyRaceWindow) an edit is the user's edit of what they see, as usual.
func TestSaveRightAfterApplyKeepsBoth(t *testing.T) {
	for _, late := range []bool{false, true} {
		name := "right after"
		if late {
			name = "later"
		}
		t.Run(name, func(t *testing.T) {
			clk := &testClock{t: time.Now()} // invites are checked against real time
			n, folderPath := testNodeWith(t, Config{NoWatcher: true, NoScrub: true, Now: clk.Now})
			v := n.vaultsNow()[0]
			p := filepath.Join(folderPath, "log.md")
			base := "line 0\n"
			if err := os.WriteFile(p, []byte(base), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			if err := n.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			v.mu.Lock()
			xID := v.index["log.md"].Version
			v.mu.Unlock()

			h, id := joinAsMember(t, n)
			theirs := []byte(base + "token-from-peer\n")
			e, err := entry.New(entry.Config{Identity: id, Vault: v.id, Clock: 50, Keys: v.ek, Time: clk.Now().UnixMilli(), Rand: rand.Reader},
				&entry.Body{Versions: []entry.Version{{Path: "log.md", Kind: entry.KindFile, Mode: 0o644, MTime: clk.Now().UnixNano(),
					Size: uint64(len(theirs)), Inline: theirs, Hash: blake3.Sum256(theirs), Supersedes: []entry.VersionID{xID}}}})
			if err != nil {
				t.Fatal(err)
			}
			serveLog(h, v.id, []*entry.Entry{e}, nil)
			connect(t, h, n)
			waitFor(t, "the peer's version to be applied", func() bool {
				b, err := os.ReadFile(p)
				return err == nil && string(b) == string(theirs)
			})
			if late {
				clk.set(clk.Now().Add(applyRaceWindow + time.Second))
			}
			// The editor read "line 0" before the apply; its save lands now.
			tmp := filepath.Join(folderPath, "log.md.tmp-editor")
			if err := os.WriteFile(tmp, []byte(base+"token-from-here\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
			if err := n.Scan(ctx); err != nil {
				t.Fatal(err)
			}
			all := func() string {
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
			if late {
				if got := all(); strings.Contains(got, "token-from-peer") {
					t.Fatalf("an edit made %s after the apply kept the peer's version it replaced:\n%s", applyRaceWindow+time.Second, got)
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
