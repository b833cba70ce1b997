package s3server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// AccessKey and SecretKey are the credentials of every server Start
// starts: it serves 127.0.0.1 only and lives as long as its caller.
const (
	AccessKey = "weft-test"
	SecretKey = "weft-test-secret-key"
)

// Server is a running versitygw.
type Server struct {
	// URL is the server's endpoint, http://127.0.0.1:PORT.
	URL string
	// Dir is the directory its POSIX backend keeps buckets in
	// (DIR/BUCKET/KEY).
	Dir string

	cmd  *exec.Cmd
	done chan error
}

// Env is os.Environ with the server's credentials as AWS_ACCESS_KEY_ID
// and AWS_SECRET_ACCESS_KEY, for a relay process.
func (s *Server) Env() []string {
	return append(os.Environ(), "AWS_ACCESS_KEY_ID="+AccessKey, "AWS_SECRET_ACCESS_KEY="+SecretKey)
}

// Binary finds versitygw: bin if set, then $WEFT_VERSITYGW (which `make
// test` sets), then what `make tools` installed in the module's
// bin/tools, then PATH.
func Binary(bin string) (string, error) {
	if bin == "" {
		bin = os.Getenv("WEFT_VERSITYGW")
	}
	if bin != "" {
		return exec.LookPath(bin)
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

// Start starts versitygw from bin on a free loopback port with its data
// in dir and its output in logPath, and waits until it answers S3
// requests. Stop it.
func Start(bin, dir, logPath string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		logf, err := os.Create(logPath)
		if err != nil {
			return nil, err
		}
		s := &Server{URL: "http://" + addr, Dir: dir, done: make(chan error, 1)}
		s.cmd = exec.Command(bin, "--port", addr, "--quiet", "posix", dir)
		s.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+AccessKey, "ROOT_SECRET_ACCESS_KEY="+SecretKey)
		s.cmd.Stdout, s.cmd.Stderr = logf, logf
		if err := s.cmd.Start(); err != nil {
			logf.Close()
			return nil, fmt.Errorf("starting versitygw: %w", err)
		}
		go func() { s.done <- s.cmd.Wait(); logf.Close() }()
		err = s.waitReady()
		if err == nil {
			return s, nil
		}
		s.Stop()
		if attempt == 2 { // before that, the port may have been taken meanwhile
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("versitygw did not start: %v\n%s", err, log)
		}
	}
}

// Stop kills the server and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// waitReady waits until s answers S3 requests, it exits, or 20 s pass.
func (s *Server) waitReady() error {
	c, err := minio.New(strings.TrimPrefix(s.URL, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), BucketLookup: minio.BucketLookupPath,
	})
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
		case werr := <-s.done:
			s.cmd = nil
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
