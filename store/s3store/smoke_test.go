package s3store_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/weftsync/weft/internal/s3test"
	"github.com/weftsync/weft/store/s3store"
	"github.com/weftsync/weft/store/storetest"
)

func chunk(t testing.TB, i, size int) (cid.Cid, []byte) {
	data := make([]byte, size)
	for j := range data {
		data[j] = byte(i*31 + j*7)
	}
	binary.BigEndian.PutUint32(data, uint32(i))
	h, err := multihash.Sum(data, multihash.BLAKE3, 32)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.Raw, h), data
}

// TestGroupedPuts checks that concurrent Puts share objects: 400 notes
// put by 32 writers take far fewer PUT requests than notes.
func TestGroupedPuts(t *testing.T) {
	srv := s3test.Start(t)
	b := newBackend(t, srv.Client(t), "grouped")
	s := b.Open(t, storetest.Options{})
	defer s.Close()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range 400 {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, d := chunk(t, i, 2048)
			if err := s.Put(c, d); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	t.Logf("400 notes: %d PUT requests, %d objects", st.Requests.Put, len(b.Units(t)))
	if st.Chunks != 400 || st.Requests.Put >= 200 {
		t.Fatalf("chunks %d, PUT requests %d: want 400 chunks in well under 200 PUTs", st.Chunks, st.Requests.Put)
	}
	for i := range 400 {
		c, d := chunk(t, i, 2048)
		got, err := s.Get(c)
		if err != nil || string(got) != string(d) {
			t.Fatalf("chunk %d: %v", i, err)
		}
	}
}

// TestReadsInOrderShareGETs: reading a large file's chunks in order, four
// at a time as the relay serves them, takes one GET per window of the
// object rather than one per chunk, and every chunk is right; a lone read
// is one GET of its record.
func TestReadsInOrderShareGETs(t *testing.T) {
	srv := s3test.Start(t)
	client := srv.Client(t)
	if err := s3store.EnsureBucket(context.Background(), client, "inorder", ""); err != nil {
		t.Fatal(err)
	}
	cfg := s3store.Config{Client: client, Bucket: "inorder", Prefix: "v/", IndexDir: filepath.Join(t.TempDir(), "index")}
	s, err := s3store.Open(cfg) // objects of up to 8 MiB, as a relay's
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n, size = 96, 64 << 10 // 6 MiB
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, d := chunk(t, i, size)
			if err := s.Put(c, d); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	t.Logf("%d chunks put in %d objects", n, s.Stats().Requests.Put)
	s.Close()
	if s, err = s3store.Open(cfg); err != nil { // nothing cached
		t.Fatal(err)
	}
	defer s.Close()
	before := s.Stats().Requests.Get
	var next atomic.Int64
	var rd sync.WaitGroup
	for range 4 {
		rd.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				c, d := chunk(t, i, size)
				got, err := s.Get(c)
				if err != nil || !bytes.Equal(got, d) {
					t.Errorf("chunk %d: %v", i, err)
				}
			}
		})
	}
	rd.Wait()
	gets := s.Stats().Requests.Get - before
	t.Logf("%d chunks of 64 KiB read in order: %d GETs", n, gets)
	if gets >= n/2 {
		t.Errorf("%d GETs for %d chunks read in order, want far fewer", gets, n)
	}
}
