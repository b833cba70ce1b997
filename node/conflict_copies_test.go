package node_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/simulation"
)

// TestConcurrentConflictOneCopyPerLoser: three devices on the in-memory
// network each edit two files while cut off from one another (a binary
// file, and a text file edited in the same line so it cannot merge). When
// the cuts heal, every device resolves the conflicts at once, each from
// whatever set of heads it has seen so far, and their resolutions meet
// again. The folder must settle with each file's winner at its name and
// every losing content in exactly one conflict copy: no content copied
// twice under a new counter, and no copy of a copy (docs/simulation.md,
// finding 4).
func TestConcurrentConflictOneCopyPerLoser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three nodes")
	}
	for _, staggered := range []bool{false, true} {
		t.Run(fmt.Sprintf("staggered=%v", staggered), func(t *testing.T) {
			testConflictOneCopyPerLoser(t, staggered)
		})
	}
}

func testConflictOneCopyPerLoser(t *testing.T, staggered bool) {
	ctx := context.Background()
	c := meshCluster(t, 3)

	files := []string{"photo.bin", "notes/todo.txt"}
	base := map[string][]byte{
		"photo.bin":      []byte("\x00base photo"),
		"notes/todo.txt": []byte("one\ntwo\nthree\n"),
	}
	for _, p := range files {
		write(t, c.Device(0).FS, p, base[p], 0)
	}
	scan(t, c, 0)
	settle(t, c, []int{0, 1, 2})

	// Cut every link; each device edits both files.
	for i := range 3 {
		for j := i + 1; j < 3; j++ {
			if err := c.Net.Cut(c.Device(i).Peer, c.Device(j).Peer); err != nil {
				t.Fatal(err)
			}
		}
	}
	edits := map[string][][]byte{}
	for i := range 3 {
		for _, p := range files {
			b := []byte(fmt.Sprintf("\x00photo by %d", i))
			if strings.HasSuffix(p, ".txt") {
				b = []byte(fmt.Sprintf("one\ntwo by %d\nthree\n", i))
			}
			edits[p] = append(edits[p], b)
			write(t, c.Device(i).FS, p, b, int64(i+1)*int64(time.Second))
		}
		scan(t, c, i)
	}

	if staggered {
		// Devices 0 and 1 meet first and resolve what they have; device 2
		// then brings a third head to paths that already hold a resolution.
		if err := c.Net.Heal(c.Device(0).Peer, c.Device(1).Peer); err != nil {
			t.Fatal(err)
		}
		c.ConnectEdges(ctx)
		settle(t, c, []int{0, 1})
	}
	c.Net.HealAll()
	c.ConnectEdges(ctx)
	tree := settle(t, c, []int{0, 1, 2})

	byContent := map[[32]byte][]string{}
	for p, h := range tree {
		byContent[h] = append(byContent[h], p)
	}
	for _, p := range files {
		for i, b := range edits[p] {
			at := byContent[blake3.Sum256(b)]
			if len(at) != 1 {
				t.Errorf("%s, device %d's edit: got it at %v, want exactly one path", p, i, at)
			}
		}
	}
	var copies []string
	for p := range tree {
		if strings.Contains(p, ".conflict-") {
			copies = append(copies, p)
		}
		if strings.Count(p, ".conflict-") > 1 {
			t.Errorf("a copy of a conflict copy: %s", p)
		}
	}
	slices.Sort(copies)
	if len(copies) != 2*len(files) {
		t.Errorf("got %d conflict copies %v, want %d (one per losing edit)", len(copies), copies, 2*len(files))
	}
}

// write replaces p on fsys with b the way an editor does (temporary file,
// rename), then sets its mtime to a fixed time plus offset nanoseconds.
func write(t *testing.T, fsys *folder.MemFS, p string, b []byte, offset int64) {
	t.Helper()
	for _, dir := range []string{folder.WorkDir, parent(p)} {
		if dir != "" {
			if err := fsys.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				t.Fatal(err)
			}
		}
	}
	f, err := fsys.CreateTemp(folder.WorkDir, "t-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename(f.Path(), p); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Chtimes(p, 2e18+offset); err != nil {
		t.Fatal(err)
	}
}

func parent(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

func scan(t *testing.T, c *simulation.Cluster, i int) {
	t.Helper()
	if err := c.Device(i).Node().Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// settle waits until devices hold identical trees and report no pending
// work, three polls in a row, and returns the tree (path -> BLAKE3 of each
// file). It fails the test after a minute.
func settle(t *testing.T, c *simulation.Cluster, devs []int) map[string][32]byte {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	stable := 0
	var why string
	for time.Now().Before(deadline) {
		var ref map[string][32]byte
		ok := true
		for _, i := range devs {
			d := c.Device(i)
			for _, f := range d.Node().Status().Folders {
				if f.Pending > 0 || f.PendingApply > 0 || f.PendingFetch > 0 {
					ok, why = false, fmt.Sprintf("device %d has work pending: %+v", i, f)
				}
			}
			items, err := simulation.Tree(d.FS)
			if err != nil {
				t.Fatal(err)
			}
			tree := map[string][32]byte{}
			for p, it := range items {
				if !it.Dir {
					tree[p] = it.Hash
				}
			}
			if ref == nil {
				ref = tree
			} else if !mapsEqual(ref, tree) {
				ok, why = false, fmt.Sprintf("device %d's tree differs from device %d's: %s", i, devs[0], treeDiff(ref, tree))
			}
		}
		if ok {
			if stable++; stable >= 3 {
				return ref
			}
		} else {
			stable = 0
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("devices %v did not settle within a minute: %s", devs, why)
	return nil
}

// treeDiff lists the paths where two trees differ, with the first bytes
// of each side's hash ("-" for absent).
func treeDiff(a, b map[string][32]byte) string {
	var out []string
	side := func(m map[string][32]byte, p string) string {
		if h, ok := m[p]; ok {
			return fmt.Sprintf("%x", h[:3])
		}
		return "-"
	}
	for p := range a {
		if a[p] != b[p] {
			out = append(out, fmt.Sprintf("%s %s/%s", p, side(a, p), side(b, p)))
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, fmt.Sprintf("%s -/%s", p, side(b, p)))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

func mapsEqual(a, b map[string][32]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
