package s3test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/weftsync/weft/store/s3store"
)

// AccessKey and SecretKey are the credentials of every server Start
// starts.
const (
	AccessKey = "weft-test"
	SecretKey = "weft-test-secret-key"
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

// Binary finds versitygw: $WEFT_VERSITYGW (which `make test` sets), then
// what `make tools` installed in the module's bin/tools, then PATH.
func Binary() (string, error) {
	if p := os.Getenv("WEFT_VERSITYGW"); p != "" {
		return p, nil
	}
	if out, err := exec.Command("go", "env", "GOMOD").Output(); err == nil {
		root := filepath.Dir(strings.TrimSpace(string(out)))
		if m, _ := filepath.Glob(filepath.Join(root, "bin", "tools", "versitygw-*", "versitygw")); len(m) > 0 {
			return m[len(m)-1], nil
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	return "", errors.New("versitygw not found: run `make tools` (it installs github.com/versity/versitygw/cmd/versitygw@v1.8.0 into bin/tools) or set WEFT_VERSITYGW")
}

// Start starts a versitygw for t on a free loopback port and stops it
// when t ends. Without the binary the test fails under CI and is skipped
// elsewhere, saying how to install it.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		cmd := exec.Command(bin, "--port", addr, "--quiet", "posix", dir)
		cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+AccessKey, "ROOT_SECRET_ACCESS_KEY="+SecretKey)
		logf, err := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting versitygw: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait(); logf.Close() }()
		stop := func() {
			_ = cmd.Process.Kill()
			<-exited
		}
		srv := &Server{URL: "http://" + addr, Dir: dir}
		if err := waitReady(srv, exited); err != nil {
			stop()
			if attempt < 3 {
				continue // the port was taken meanwhile
			}
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("versitygw did not start: %v\n%s", err, log)
		}
		t.Cleanup(stop)
		return srv
	}
}

// waitReady waits until srv answers S3 requests, it exits, or 20 s pass.
func waitReady(srv *Server, exited <-chan error) error {
	c, err := minio.New(srv.URL[len("http://"):], &minio.Options{Creds: credsFor(), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := c.ListBuckets(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case werr := <-exited:
			return fmt.Errorf("exited: %v", werr)
		case <-tick.C:
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func credsFor() *credentials.Credentials {
	return credentials.NewStaticV4(AccessKey, SecretKey, "")
}
