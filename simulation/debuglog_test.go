package simulation

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/store/home"
	"github.com/weftsync/weft/store/vaultdb"
)

// TestS1SmallKeepOnFailure runs TestS1Small's configuration (WEFT_F6_SEED
// picks one seed, WEFT_F6_MIX=calm or full the mix, WEFT_F6_SIZE=quick
// TestS1Quick's size) with the homes
// in WEFT_F6_DIR and, when a run fails, writes every device's version log
// (each version, its supersedes edges and the write header of inline
// content), heads, folder index records and the graph's decision per path
// to WEFT_F6_DIR/<seed>/dump.txt and keeps the homes; passing runs are
// removed. For diagnosing runs that fail only under load (finding 6).
func TestS1SmallKeepOnFailure(t *testing.T) {
	dir := os.Getenv("WEFT_F6_DIR")
	if dir == "" {
		t.Skip("set WEFT_F6_DIR to run")
	}
	seeds := s1Seeds
	if s := os.Getenv("WEFT_F6_SEED"); s != "" {
		var seed uint64
		fmt.Sscan(s, &seed)
		seeds = []uint64{seed}
	}
	for _, seed := range seeds {
		d := filepath.Join(dir, fmt.Sprint(seed))
		os.RemoveAll(d)
		cfg := s1Small(seed)
		if os.Getenv("WEFT_F6_SIZE") == "quick" {
			cfg = s1Quick(seed)
		}
		cfg.Dir = d
		if os.Getenv("WEFT_F6_MIX") == "calm" {
			cfg.Probs = calmProbs
		}
		if os.Getenv("WEFT_F6_MIX") == "full" {
			cfg.Probs = DefaultProbs
		}
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		t.Logf("seed %d: setup %.1fs, wall %.1fs, converged in %.1fs, %d conflict files", seed, res.SetupSeconds, res.WallSeconds, res.ConvergeSeconds, res.ConflictFiles)
		if res.OK() {
			os.RemoveAll(d)
			continue
		}
		for _, f := range res.Failures {
			t.Error(f)
		}
		out, err := os.Create(filepath.Join(d, "dump.txt"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(out, strings.Join(res.Failures, "\n"))
		if err := dumpHomes(out, d, cfg.Devices); err != nil {
			t.Error(err)
		}
		out.Close()
		t.Logf("state kept in %s", d)
	}
}

// dumpHomes writes what each device's vault database holds.
func dumpHomes(w io.Writer, dir string, devices int) error {
	names := map[[32]byte]string{}
	for i := 0; i < devices; i++ {
		h, err := home.Open(filepath.Join(dir, fmt.Sprintf("d%d", i), "home"))
		if err != nil {
			return err
		}
		id, err := h.Identity()
		if err != nil {
			return err
		}
		names[id.ID()] = fmt.Sprintf("d%d", i)
	}
	vid := func(id protocol.VersionID) string {
		return fmt.Sprintf("%s/%d.%d", names[id.Author], id.Seq, id.Index)
	}
	for i := 0; i < devices; i++ {
		h, _ := home.Open(filepath.Join(dir, fmt.Sprintf("d%d", i), "home"))
		vs, err := h.Vaults()
		if err != nil {
			return err
		}
		root, err := h.RootSecret(vs[0])
		if err != nil {
			return err
		}
		ek := root.Epoch0().Keys(0)
		db, _, err := vaultdb.Open(vs[0].DBDir(), vs[0].ID)
		if err != nil {
			return err
		}
		g := protocol.NewGraph()
		var lines []string
		for author, head := range db.Heads() {
			_ = db.Range(author, 1, head.Seq, func(e *entry.Entry) error {
				body, err := entry.OpenBody(e, ek)
				if err != nil {
					return err
				}
				for j, v := range body.Versions {
					id := protocol.VersionID{Author: e.Author(), Seq: e.Seq(), Index: uint32(j)}
					cv := protocol.Version{ID: id, Path: v.Path, Kind: protocol.Kind(v.Kind), Size: v.Size, Mode: v.Mode, MTime: v.MTime, Clock: e.Clock(), ContentHash: v.Hash}
					if v.Kind == entry.KindFile {
						cv.Text = len(v.Inline) > 0 && protocol.IsText(v.Inline) || v.Size == 0
						if len(v.Inline) == 0 && v.Size > 0 {
							cv.Text = v.Size <= protocol.MaxMergeBytes
						}
					}
					var sup []string
					for _, s := range v.Supersedes {
						cv.Supersedes = append(cv.Supersedes, protocol.VersionID{Author: s.Author, Seq: s.Seq, Index: s.Index})
						sup = append(sup, vid(protocol.VersionID{Author: s.Author, Seq: s.Seq, Index: s.Index}))
					}
					_ = g.Add(cv)
					hdr := string(v.Inline)
					if k := strings.IndexByte(hdr, '\n'); k >= 0 {
						hdr = hdr[:k]
					}
					if len(hdr) > 40 {
						hdr = hdr[:40]
					}
					lines = append(lines, fmt.Sprintf("  %-40s %-10s clock=%d kind=%d hash=%x mtime=%d %q sup=%v", v.Path, vid(id), e.Clock(), v.Kind, v.Hash[:4], v.MTime, hdr, sup))
				}
				return nil
			})
		}
		slices.Sort(lines)
		fmt.Fprintf(w, "== d%d: %d versions\n%s\n", i, g.Len(), strings.Join(lines, "\n"))
		idx := map[string]vaultdb.Record{}
		_ = db.IndexAll(func(p string, r vaultdb.Record) error { idx[p] = r; return nil })
		for _, p := range g.Paths() {
			var hs []string
			for _, hd := range g.Heads(p) {
				hs = append(hs, vid(hd.ID))
			}
			dec, err := g.Resolve(p, nil)
			r, ok := idx[p]
			fmt.Fprintf(w, "  path %s heads=%v index=%v(%s hash=%x) decision=%v winner=%s copies=%d err=%v dangling=%d\n", p, hs, ok,
				vid(protocol.VersionID{Author: r.Version.Author, Seq: r.Version.Seq, Index: r.Version.Index}), r.Hash[:4], dec.Outcome, vid(dec.Winner.ID), len(dec.Copies), err, len(g.Dangling(p)))
		}
		db.Close()
	}
	return nil
}
