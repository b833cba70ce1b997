package s3test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/weftsync/weft/internal/s3server"
	"github.com/weftsync/weft/store/s3store"
)

// AccessKey and SecretKey are the credentials of every server Start
// starts.
const (
	AccessKey = s3server.AccessKey
	SecretKey = s3server.SecretKey
)

// Server is a running versitygw.
type Server struct {
	// URL is the server's endpoint, http://127.0.0.1:PORT.
	URL string
	// Dir is the directory its POSIX backend keeps buckets in.
	Dir string
}

// Endpoint is how to reach s, with path-style buckets.
func (s *Server) Endpoint() s3store.Endpoint {
	return s3store.Endpoint{URL: s.URL, PathStyle: true}
}

// Client returns a client for s with its credentials. It sets the
// credentials in the test's environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY), as a relay would read them.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	c, err := s3store.Connect(s.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Start starts a versitygw for t (s3server.Start) and stops it when t
// ends. Without the binary the test fails under CI and is skipped
// elsewhere, saying how to install it.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := s3server.Binary("")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	srv, err := s3server.Start(bin, t.TempDir(), filepath.Join(t.TempDir(), "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return &Server{URL: srv.URL, Dir: srv.Dir}
}
