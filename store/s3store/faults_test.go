package s3store_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/weftsync/weft/internal/s3test"
	"github.com/weftsync/weft/store/chunkstore"
	"github.com/weftsync/weft/store/s3store"
)

// faultRT answers object PUTs with 503 SlowDown and DELETEs with 403
// AccessDenied when told: the faults a busy or strict bucket gives.
type faultRT struct {
	base    http.RoundTripper
	denyDel atomic.Bool
	fail503 atomic.Int64 // object PUTs to answer 503 SlowDown
}

func (f *faultRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/p/") && f.fail503.Add(-1) >= 0 {
		if r.Body != nil {
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
		body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>slow</Message></Error>`
		return &http.Response{StatusCode: 503, Status: "503 Slow Down", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"application/xml"}}, Body: io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)), Request: r}, nil
	}
	if r.Method == http.MethodDelete && f.denyDel.Load() {
		body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>denied</Message></Error>`
		return &http.Response{StatusCode: 403, Status: "403 Forbidden", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": {"application/xml"}}, Body: io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)), Request: r}, nil
	}
	return f.base.RoundTrip(r)
}

func faultClient(t *testing.T, srv *s3test.Server, bucket string) (*minio.Client, *faultRT) {
	rt := &faultRT{base: http.DefaultTransport.(*http.Transport).Clone()}
	c, err := minio.New(srv.URL[len("http://"):], &minio.Options{
		Creds: credentials.NewStaticV4(s3test.AccessKey, s3test.SecretKey, ""), BucketLookup: minio.BucketLookupPath, Transport: rt,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s3store.EnsureBucket(context.Background(), c, bucket, ""); err != nil {
		t.Fatal(err)
	}
	return c, rt
}

type qlog struct {
	mu sync.Mutex
	n  int
}

func (q *qlog) rec(cs []cid.Cid, by chunkstore.FoundBy) { q.mu.Lock(); q.n += len(cs); q.mu.Unlock() }
func (q *qlog) get() int                                { q.mu.Lock(); defer q.mu.Unlock(); return q.n }

// Open finds an object gone: Stats().Quarantined rises but OnQuarantine is
// never told, so the relay's lostSeen never catches up (planStaleLocked).
func TestOpenDoesNotCountLostObjectsAsQuarantined(t *testing.T) {
	srv := s3test.Start(t)
	c, _ := faultClient(t, srv, "rv1")
	dir := t.TempDir()
	q := &qlog{}
	cfg := s3store.Config{Client: c, Bucket: "rv1", Prefix: "v/", IndexDir: filepath.Join(dir, "idx"), CommitDelay: -1, OnQuarantine: q.rec}
	s, err := s3store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		k, d := chunk(t, i, 100)
		if err := s.Put(k, d); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	var first string
	for oi := range c.ListObjects(context.Background(), "rv1", minio.ListObjectsOptions{Prefix: "v/", Recursive: true}) {
		first = oi.Key
		break
	}
	if err := c.RemoveObject(context.Background(), "rv1", first, minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err = s3store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st := s.Stats()
	t.Logf("after Open: Stats().Quarantined=%d Corrupt=%d Chunks=%d; OnQuarantine told of %d", st.Quarantined, st.Corrupt, st.Chunks, q.get())
	if st.Quarantined != uint64(q.get()) {
		t.Errorf("Stats().Quarantined=%d but OnQuarantine told of %d: relay planStaleLocked stays true forever", st.Quarantined, q.get())
	}
}

// Concurrent Puts of one new chunk land in different batches; their
// uploads index concurrently under the shared dropMu and both count it.
func TestConcurrentPutsOfOneChunkCountOnce(t *testing.T) {
	srv := s3test.Start(t)
	c, _ := faultClient(t, srv, "rv3")
	dir := t.TempDir()
	cfg := s3store.Config{Client: c, Bucket: "rv3", Prefix: "v/", IndexDir: filepath.Join(dir, "idx"), CommitDelay: -1, Uploads: 8}
	s, err := s3store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 150
	for i := range rounds {
		k, d := chunk(t, i, 64)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if err := s.Put(k, d); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	st := s.Stats()
	t.Logf("distinct chunks %d; Stats().Chunks %d BytesStored %d (want %d)", rounds, st.Chunks, st.BytesStored, rounds*64)
	s.Close()
	s, _ = s3store.Open(cfg)
	defer s.Close()
	t.Logf("after reopen (recount): Chunks %d", s.Stats().Chunks)
	if st.Chunks != rounds {
		t.Errorf("Chunks drifted: %d, want %d", st.Chunks, rounds)
	}
}

// A DELETE that fails (no delete permission, object lock, an outage) of a
// retired object past its grace makes Open fail.
func TestOpenSurvivesAFailedDelete(t *testing.T) {
	srv := s3test.Start(t)
	c, rt := faultClient(t, srv, "rv4")
	dir := t.TempDir()
	var clk atomic.Int64
	clk.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clk.Load()) }
	cfg := s3store.Config{Client: c, Bucket: "rv4", Prefix: "v/", IndexDir: filepath.Join(dir, "idx"), CommitDelay: -1, RetireGrace: time.Hour, Now: now}
	s, err := s3store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	k1, d1 := chunk(t, 1, 100)
	if err := s.Put(k1, d1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(context.Background(), chunkstore.GCOptions{Live: func(func(cid.Cid) bool) {}, AllowEmptyLiveSet: true, Grace: -1}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	clk.Add(int64(2 * time.Hour))
	rt.denyDel.Store(true)
	s, err = s3store.Open(cfg)
	if err != nil {
		t.Errorf("Open fails when a retired object cannot be deleted: %v", err)
		return
	}
	s.Close()
}

// One 503 SlowDown on an object PUT fails the Put: the body is a
// bytes.Buffer (not an io.Seeker), so minio-go does not retry.
func TestPutRetriedAfterSlowDown(t *testing.T) {
	srv := s3test.Start(t)
	c, rt := faultClient(t, srv, "rv5")
	cfg := s3store.Config{Client: c, Bucket: "rv5", Prefix: "v/", IndexDir: filepath.Join(t.TempDir(), "idx"), CommitDelay: -1}
	s, err := s3store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rt.fail503.Store(1)
	k, d := chunk(t, 1, 100)
	if err := s.Put(k, d); err != nil {
		t.Errorf("one SlowDown fails the Put (no retry): %v", err)
	}
	// A GET after a 503 is retried by minio-go: show the contrast.
}

// A zero-byte object under the prefix is indexed "so that GC deletes it",
// but GC skips objects of size 0.
func TestEmptyObjectCollected(t *testing.T) {
	srv := s3test.Start(t)
	c, _ := faultClient(t, srv, "rv6")
	key := "v/p/0000000000000005-0011223344556677"
	if _, err := c.PutObject(context.Background(), "rv6", key, bytes.NewReader(nil), 0, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := s3store.Config{Client: c, Bucket: "rv6", Prefix: "v/", IndexDir: filepath.Join(t.TempDir(), "idx"), CommitDelay: -1, RetireGrace: -1}
	s, err := s3store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.GC(context.Background(), chunkstore.GCOptions{Live: func(func(cid.Cid) bool) {}, AllowEmptyLiveSet: true, Grace: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StatObject(context.Background(), "rv6", key, minio.StatObjectOptions{}); err == nil {
		t.Errorf("the empty object is still there after GC")
	}
}

// openIndex removes the index directory on any OpenFile error, not only
// corruption: a second Open of the same IndexDir (lock held) wipes the
// index of the store that is running.
func TestSecondOpenKeepsTheIndex(t *testing.T) {
	srv := s3test.Start(t)
	c, _ := faultClient(t, srv, "rv7")
	cfg := s3store.Config{Client: c, Bucket: "rv7", Prefix: "v/", IndexDir: filepath.Join(t.TempDir(), "idx"), CommitDelay: -1}
	a, err := s3store.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	k, d := chunk(t, 1, 100)
	if err := a.Put(k, d); err != nil {
		t.Fatal(err)
	}
	b, err := s3store.Open(cfg)
	if err == nil {
		defer b.Close()
		t.Errorf("a second Open of a locked IndexDir succeeded (it removed the running store's index directory)")
	} else {
		t.Logf("second Open: %v", err)
	}
	k2, d2 := chunk(t, 2, 100)
	t.Logf("first store after that: Put=%v", a.Put(k2, d2))
}
