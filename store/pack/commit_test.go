package pack

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
)

// TestGroupCommit: 16 concurrent writers of 2 KiB chunks share fsyncs, at
// most 0.1 pack fsync per put, and every chunk is readable afterwards.
// The commit delay is generous (the default is 1 ms) so that the count
// measures the grouping, not the scheduler: on a loaded 2-core CI machine a
// writer goroutine can miss a 1 ms gap, which split batches and once gave
// 0.128 fsyncs per put. The loop waits only for callers known to be in Put,
// so a long delay costs time only when a writer stops.
func TestGroupCommit(t *testing.T) {
	const writers, perWriter = 16, 100
	s := openStore(t, Config{Dir: t.TempDir(), CommitDelay: 250 * time.Millisecond})
	defer s.Close()
	type put struct {
		c    cid.Cid
		data []byte
	}
	all := make([][]put, writers)
	for w := range all {
		rng := rand.New(rand.NewPCG(uint64(w), 7))
		for range perWriter {
			c, data := randChunk(t, rng, 2048)
			all[w] = append(all[w], put{c, data})
		}
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for _, p := range all[w] {
				if err := s.Put(p.c, p.data); err != nil {
					t.Errorf("Put: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	if st.Puts != writers*perWriter {
		t.Fatalf("got %d puts, want %d", st.Puts, writers*perWriter)
	}
	perPut := float64(st.Fsyncs) / float64(st.Puts)
	t.Logf("%d puts, %d pack fsyncs, %d index syncs, %d batches: %.3f fsyncs per put",
		st.Puts, st.Fsyncs, st.IndexSyncs, st.Batches, perPut)
	if perPut > 0.1 {
		t.Errorf("got %.3f pack fsyncs per put, want <= 0.1", perPut)
	}
	// New chunks need no synced index write (syncer.go): the pack
	// fsyncs are all the fsyncs.
	if st.IndexSyncs != 0 {
		t.Errorf("got %d synced index writes for puts of new chunks, want 0", st.IndexSyncs)
	}
	if all := float64(st.Fsyncs+st.IndexSyncs) / float64(st.Puts); all > 0.1 {
		t.Errorf("got %.3f pack and index fsyncs per put, want <= 0.1", all)
	}
	for _, ps := range all {
		for _, p := range ps {
			got, err := s.Get(p.c)
			if err != nil || !bytes.Equal(got, p.data) {
				t.Fatalf("Get: %v", err)
			}
		}
	}
	mustVerify(t, s)
}

// TestSpaceRatio is B8 for the chunk store: bytes on disk (packs and index
// together) over bytes stored stays <= 1.01 for a mix of 2 KiB and 4 MiB
// chunks. The mix, 1,000 small and 8 large chunks, gives small chunks 6 %
// of the bytes: more than a vault of notes, images and archives has.
func TestSpaceRatio(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, Config{Dir: dir, PackSize: 16 << 20})
	var stored atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for i := range 126 {
				n := 2048
				if i == 0 {
					n = 4 << 20
				}
				data := make([]byte, n) // content is irrelevant here: only its name must be unique
				binary.LittleEndian.PutUint64(data, rng.Uint64())
				binary.LittleEndian.PutUint64(data[8:], rng.Uint64())
				if err := s.Put(chunkCID(t, data), data); err != nil {
					t.Errorf("Put: %v", err)
					return
				}
				stored.Add(int64(n))
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Both the files' lengths and the blocks the file system allocated
	// for them (what small files would waste): packs and index.
	onDisk, alloc := dirUsage(t, dir)
	ratio, allocRatio := float64(onDisk)/float64(stored.Load()), float64(alloc)/float64(stored.Load())
	t.Logf("stored %d bytes, %d on disk (packs and index): ratio %.4f; %d bytes in allocated blocks: ratio %.4f",
		stored.Load(), onDisk, ratio, alloc, allocRatio)
	if ratio > 1.01 || allocRatio > 1.01 {
		t.Errorf("got bytes on disk / bytes stored %.4f (allocated blocks %.4f), want <= 1.01", ratio, allocRatio)
	}
}

// dirSize sums the sizes of the regular files under dir.
func dirSize(t testing.TB, dir string) int64 {
	size, _ := dirUsage(t, dir)
	return size
}

// dirUsage sums the sizes of the regular files under dir and the space the
// file system allocated to them.
func dirUsage(t testing.TB, dir string) (size, alloc int64) {
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			size += fi.Size()
			alloc += allocated(fi)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return size, alloc
}
