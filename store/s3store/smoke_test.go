package s3store_test

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/weftsync/weft/internal/s3test"
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
