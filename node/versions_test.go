package node

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/history"
)

// randomBytes returns n bytes from a seeded generator: content that is
// chunked (not inline) and shares no chunk with other seeds.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// keptEdit writes content at rel, records it and waits until the keeper
// has handled what the scan queued.
func keptEdit(t *testing.T, v *vault, clk *testClock, folderPath, rel string, content []byte, at time.Time) {
	t.Helper()
	edit(t, v, clk, folderPath, rel, content, at)
	if err := v.keep.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A device alone (no peer, no relay) restores a large file it overwrote
// and one it deleted: the content comes from its own version store.
func TestLocalVersionsRestoreAlone(t *testing.T) {
	n, v, folderPath, clk := historyNode(t)
	base := clk.Now()
	v1, v2, gone := randomBytes(1, 300<<10), randomBytes(2, 300<<10), randomBytes(3, 200<<10)
	keptEdit(t, v, clk, folderPath, "big.bin", v1, base.Add(time.Minute))
	keptEdit(t, v, clk, folderPath, "gone.bin", gone, base.Add(time.Minute))
	keptEdit(t, v, clk, folderPath, "big.bin", v2, base.Add(2*time.Minute))
	keptEdit(t, v, clk, folderPath, "gone.bin", nil, base.Add(3*time.Minute))

	big := filepath.Join(folderPath, "big.bin")
	h, err := n.API().History(big)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Versions) != 2 || h.Versions[0].Content != "local" || h.Versions[1].Content != "versions" {
		t.Fatalf("history of big.bin: %+v; want the current version local and the overwritten one in versions", h.Versions)
	}
	dry, err := n.API().Restore(context.Background(), api.RestoreRequest{Path: big, Version: h.Versions[1].ID, DryRun: true})
	if err != nil || len(dry.Changes) != 1 || len(dry.Failed) != 0 || dry.Changes[0].Content != "versions" {
		t.Fatalf("dry run: %+v, %v; want one restore from versions", dry, err)
	}
	if _, err := n.API().Restore(context.Background(), api.RestoreRequest{Path: big, Version: h.Versions[1].ID}); err != nil {
		t.Fatalf("restoring the overwritten version: %v", err)
	}
	if b, _ := os.ReadFile(big); !bytes.Equal(b, v1) {
		t.Fatal("big.bin does not hold the first version after the restore")
	}

	g := filepath.Join(folderPath, "gone.bin")
	hg, err := n.API().History(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(hg.Versions) != 2 || hg.Versions[1].Content != "versions" {
		t.Fatalf("history of gone.bin: %+v; want the deleted file's content in versions", hg.Versions)
	}
	if _, err := n.API().Restore(context.Background(), api.RestoreRequest{Path: g, Version: hg.Versions[1].ID}); err != nil {
		t.Fatalf("restoring the deleted file: %v", err)
	}
	if b, _ := os.ReadFile(g); !bytes.Equal(b, gone) {
		t.Fatal("gone.bin does not hold its content after the restore")
	}
}

// A budget too small for every version drops the oldest first; history
// then says none for them, a dry run names them as failures, and a
// restore of all of them changes nothing unless --partial.
func TestLocalVersionsBudgetDropsOldestFirst(t *testing.T) {
	n, v, folderPath, clk := historyNode(t)
	base := clk.Now()
	for i := range 4 {
		keptEdit(t, v, clk, folderPath, "f.bin", randomBytes(uint64(10+i), 100<<10), base.Add(time.Duration(i+1)*time.Minute))
	}
	keptEdit(t, v, clk, folderPath, "other.bin", randomBytes(20, 100<<10), base.Add(5*time.Minute))
	// Room for three of the five versions (each 100 KiB plus envelopes).
	info, err := n.API().SetVersionPolicy(context.Background(), folderPath, api.VersionPolicy{Budget: 330 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if info.Versions != 3 {
		t.Fatalf("%d versions after the budget shrank, want 3", info.Versions)
	}
	f := filepath.Join(folderPath, "f.bin")
	h, err := n.API().History(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"local", "versions", "none", "none"} // newest first
	for i, hv := range h.Versions {
		if hv.Content != want[i] {
			t.Fatalf("version %d (%s) content %q, want %q (all: %+v)", i, hv.ID, hv.Content, want[i], h.Versions)
		}
	}
	dry, err := n.API().Restore(context.Background(), api.RestoreRequest{Path: f, Version: h.Versions[3].ID, DryRun: true})
	if err != nil || len(dry.Changes) != 0 || len(dry.Failed) != 1 || dry.Failed[0].Code != "unavailable" {
		t.Fatalf("dry run of a dropped version: %+v, %v; want it listed as unavailable and nothing promised", dry, err)
	}
	head := v.db.Head(n.ID()).Seq
	_, err = n.API().Restore(context.Background(), api.RestoreRequest{Path: f, Version: h.Versions[3].ID})
	if !errors.Is(err, history.ErrContentUnavailable) {
		t.Fatalf("restoring a dropped version: %v, want history.ErrContentUnavailable", err)
	}
	if v.db.Head(n.ID()).Seq != head {
		t.Fatal("a failed restore wrote an entry")
	}
}

// --all with one path that cannot be restored changes nothing and names
// it; with Partial the rest is restored.
func TestRestoreAllNamesFailuresAndPartial(t *testing.T) {
	n, v, folderPath, clk := historyNode(t)
	if _, err := n.API().SetVersionPolicy(context.Background(), folderPath, api.VersionPolicy{Budget: 1}); err != nil {
		t.Fatal(err)
	}
	base := clk.Now()
	edit(t, v, clk, folderPath, "small.txt", []byte("small before"), base.Add(time.Minute))
	edit(t, v, clk, folderPath, "big.bin", randomBytes(30, 100<<10), base.Add(time.Minute))
	at := base.Add(90 * time.Second).Format(time.RFC3339)
	edit(t, v, clk, folderPath, "small.txt", []byte("small after"), base.Add(2*time.Minute))
	edit(t, v, clk, folderPath, "big.bin", randomBytes(31, 100<<10), base.Add(2*time.Minute))

	_, err := n.API().Restore(context.Background(), api.RestoreRequest{All: true, At: at})
	if !errors.Is(err, history.ErrContentUnavailable) || !bytes.Contains([]byte(err.Error()), []byte("big.bin")) {
		t.Fatalf("--all with unavailable content: %v; want an error naming big.bin", err)
	}
	if got := readOr(t, filepath.Join(folderPath, "small.txt")); got != "small after" {
		t.Fatalf("small.txt is %q after a refused --all restore, want it unchanged", got)
	}
	res, err := n.API().Restore(context.Background(), api.RestoreRequest{All: true, At: at, Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || res.Changes[0].Path != "small.txt" || len(res.Failed) != 1 || res.Failed[0].Path != "big.bin" {
		t.Fatalf("partial restore: %+v; want small.txt restored and big.bin named", res)
	}
	if got := readOr(t, filepath.Join(folderPath, "small.txt")); got != "small before" {
		t.Fatalf("small.txt is %q after the partial restore", got)
	}
}

// The store keeps what changes: a 1 MiB file edited 100 times (a few
// bytes changed in place each time) costs its chunks once plus the chunks
// each edit touched, far below 100 copies.
func TestLocalVersionsDedupEdits(t *testing.T) {
	_, v, folderPath, clk := historyNode(t)
	base := clk.Now()
	content := randomBytes(40, 1<<20)
	keptEdit(t, v, clk, folderPath, "doc.bin", content, base)
	r := rand.New(rand.NewPCG(41, 41))
	for i := range 100 {
		off := r.IntN(len(content) - 64)
		copy(content[off:], randomBytes(uint64(100+i), 64))
		keptEdit(t, v, clk, folderPath, "doc.bin", content, base.Add(time.Duration(i+1)*time.Minute))
	}
	info := v.keep.Info()
	if info.Versions != 101 {
		t.Fatalf("%d versions kept, want 101", info.Versions)
	}
	perVersion := info.Bytes / info.Versions
	t.Logf("1 MiB file edited 100 times: %d versions, %d bytes held (%d per version), %d on disk", info.Versions, info.Bytes, perVersion, info.BytesOnDisk)
	if info.Bytes > 30<<20 {
		t.Fatalf("the store holds %d bytes for 101 versions of a 1 MiB file; want far below 101 MiB", info.Bytes)
	}
}
