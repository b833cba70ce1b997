package simulation

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
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
		if err := dumpHomes(out, d, cfg.Devices, nil); err != nil {
			t.Error(err)
		}
		out.Close()
		t.Logf("state kept in %s", d)
	}
}

// dumpHomes writes what each device's vault database holds: every
// version (only those at paths keep accepts, if keep is not nil), and
// each path's heads, index record and decision.
func dumpHomes(w io.Writer, dir string, devices int, keep func(path string) bool) error {
	if keep == nil {
		keep = func(string) bool { return true }
	}
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
	var blocks []string // each device's dump, to print repeats briefly
	vid := func(id protocol.VersionID) string {
		return fmt.Sprintf("%s/%d.%d", names[id.Author], id.Seq, id.Index)
	}
	for i := 0; i < devices; i++ {
		h, _ := home.Open(filepath.Join(dir, fmt.Sprintf("d%d", i), "home"))
		vs, err := h.Vaults()
		if err != nil {
			return err
		}
		root, err := h.VaultSecrets(vs[0])
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
					cv := protocol.Version{ID: id, Path: v.Path, Kind: v.Kind, Size: v.Size, Mode: v.Mode, MTime: v.MTime, Clock: e.Clock(), ContentHash: v.Hash}
					if v.Kind == entry.KindFile {
						cv.Text = len(v.Inline) > 0 && protocol.IsText(v.Inline) || v.Size == 0
						if len(v.Inline) == 0 && v.Size > 0 {
							cv.Text = v.Size <= protocol.MaxMergeBytes
						}
					}
					var sup []string
					for _, s := range v.Supersedes {
						cv.Supersedes = append(cv.Supersedes, s)
						sup = append(sup, vid(s))
					}
					_ = g.Add(cv)
					hdr := string(v.Inline)
					if k := strings.IndexByte(hdr, '\n'); k >= 0 {
						hdr = hdr[:k]
					}
					if len(hdr) > 40 {
						hdr = hdr[:40]
					}
					if !keep(v.Path) {
						continue
					}
					lines = append(lines, fmt.Sprintf("  %-40s %-10s clock=%d kind=%d hash=%x mtime=%d %q sup=%v", v.Path, vid(id), e.Clock(), v.Kind, v.Hash[:4], v.MTime, hdr, sup))
				}
				return nil
			})
		}
		slices.Sort(lines)
		var blk strings.Builder
		fmt.Fprintf(&blk, "%d versions\n%s\n", g.Len(), strings.Join(lines, "\n"))
		idx := map[string]vaultdb.Record{}
		_ = db.IndexAll(func(p string, r vaultdb.Record) error { idx[p] = r; return nil })
		for _, p := range g.Paths() {
			if !keep(p) {
				continue
			}
			var hs []string
			for _, hd := range g.Heads(p) {
				hs = append(hs, vid(hd.ID))
			}
			dec, err := g.Resolve(p, nil)
			r, ok := idx[p]
			fmt.Fprintf(&blk, "  path %s heads=%v index=%v(%s hash=%x) decision=%v winner=%s copies=%d err=%v dangling=%d\n", p, hs, ok,
				vid(protocol.VersionID{Author: r.Version.Author, Seq: r.Version.Seq, Index: r.Version.Index}), r.Hash[:4], dec.Outcome, vid(dec.Winner.ID), len(dec.Copies), err, len(g.Dangling(p)))
		}
		db.Close()
		if j := slices.Index(blocks, blk.String()); j >= 0 {
			fmt.Fprintf(w, "== d%d: the same as d%d\n", i, j)
		} else {
			fmt.Fprintf(w, "== d%d: %s", i, blk.String())
		}
		blocks = append(blocks, blk.String())
	}
	return nil
}

// failedPathStems returns the stems ("f5", "docs/f2") of the file paths
// that failure messages name, so a failing run can dump just those paths'
// histories into the test log.
func failedPathStems(failures []string) []string {
	var stems []string
	for _, f := range failures {
		for _, m := range failedPathRE.FindAllString(f, -1) {
			stem, _, _ := strings.Cut(m, ".")
			if !slices.Contains(stems, stem) {
				stems = append(stems, stem)
			}
		}
	}
	return stems
}

var failedPathRE = regexp.MustCompile(`[A-Za-z0-9_/-]+\.[A-Za-z0-9_.-]*txt`)

// logFailedPaths writes, into t's log, every device's history of the
// paths res's failures name (dumpHomes), so a run that fails where its
// homes are not kept (CI) still says what each device held and decided.
func logFailedPaths(t *testing.T, dir string, res *Result) {
	t.Helper()
	stems := failedPathStems(res.Failures)
	if len(stems) == 0 {
		return
	}
	var b strings.Builder
	err := dumpHomes(&b, dir, res.Devices, func(p string) bool {
		for _, s := range stems {
			if p == s || strings.HasPrefix(p, s+".") {
				return true
			}
		}
		return false
	})
	t.Logf("what each device holds at %v:\n%s", stems, b.String())
	if err != nil {
		t.Logf("dumping the homes: %v", err)
	}
}

func TestFailedPathStems(t *testing.T) {
	got := failedPathStems([]string{
		"seed 3 step 200: write 17.1 by d0 at f5.txt lost (not in the final tree, not superseded by a user operation)",
		"d0: one content in 2 conflict copies: docs/f2.conflict-20261130-054657-1a2b3c.txt, docs/f2.conflict-20261130-054657-1a2b3c-2.txt",
	})
	if want := []string{"f5", "docs/f2"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
