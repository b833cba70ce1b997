package s3store_test

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/weftsync/weft/store/chunkstore"
	"github.com/weftsync/weft/store/s3store"
	"github.com/weftsync/weft/store/storetest"
)

// newBackend makes a store over bucket with a small object size, so that
// a few chunks span several objects, and no retire grace, so that a GC
// frees space at once.
func newBackend(t *testing.T, client *minio.Client, bucket string) storetest.Backend {
	ctx := context.Background()
	if err := s3store.EnsureBucket(ctx, client, bucket, ""); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const prefix = "vault/"
	key := func(name string) string { return name }
	return storetest.Backend{
		Open: func(t testing.TB, o storetest.Options) chunkstore.Store {
			t.Helper()
			s, err := s3store.Open(s3store.Config{
				Client: client, Bucket: bucket, Prefix: prefix, IndexDir: filepath.Join(dir, "index"),
				ObjectSize: 64 << 10, RetireGrace: -1, OnQuarantine: o.OnQuarantine, Now: o.Now,
			})
			if err != nil {
				t.Fatalf("opening the S3 store: %v", err)
			}
			return s
		},
		IndexDir: filepath.Join(dir, "index"),
		Units: func(t testing.TB) []string {
			var out []string
			for oi := range client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
				if oi.Err != nil {
					t.Fatal(oi.Err)
				}
				out = append(out, oi.Key)
			}
			return out
		},
		ReadUnit: func(t testing.TB, name string) []byte {
			o, err := client.GetObject(ctx, bucket, key(name), minio.GetObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			b, err := io.ReadAll(o)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		WriteUnit: func(t testing.TB, name string, data []byte) {
			if _, err := client.PutObject(ctx, bucket, key(name), bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		RemoveUnit: func(t testing.TB, name string) {
			if err := client.RemoveObject(ctx, bucket, key(name), minio.RemoveObjectOptions{}); err != nil {
				t.Fatal(err)
			}
		},
	}
}
