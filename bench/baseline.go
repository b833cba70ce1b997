package bench

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"lukechampine.com/blake3"
)

// The baselines: what the machine does with the same bytes and no weft.

// mibps converts bytes over a duration to MiB/s.
func mibps(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / (1 << 20) / d.Seconds()
}

// tcpCopy sends the files' bytes over one loopback TCP connection to a
// reader that discards them, and returns how long it took.
func tcpCopy(files []string) (time.Duration, int64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, fmt.Errorf("baseline listen: %w", err)
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		got <- n
	}()
	start := time.Now()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, 0, fmt.Errorf("baseline dial: %w", err)
	}
	var sent int64
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			c.Close()
			return 0, 0, err
		}
		n, err := io.Copy(c, f)
		f.Close()
		sent += n
		if err != nil {
			c.Close()
			return 0, 0, fmt.Errorf("baseline send: %w", err)
		}
	}
	c.Close()
	n := <-got
	d := time.Since(start)
	if n != sent {
		return 0, 0, fmt.Errorf("baseline TCP copy: received %d of %d bytes", n, sent)
	}
	return d, n, nil
}

// diskCopy writes the files' bytes to new files under dir, each synced
// with fsync before it is closed, and returns how long it took. The copies
// are removed afterwards.
func diskCopy(files []string, dir string) (time.Duration, int64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	buf := make([]byte, 1<<20)
	var total int64
	start := time.Now()
	for i, p := range files {
		src, err := os.Open(p)
		if err != nil {
			return 0, 0, err
		}
		dst, err := os.Create(filepath.Join(dir, fmt.Sprintf("%06d", i)))
		if err != nil {
			src.Close()
			return 0, 0, err
		}
		n, err := io.CopyBuffer(struct{ io.Writer }{dst}, src, buf)
		src.Close()
		total += n
		if err == nil {
			err = dst.Sync()
		}
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, 0, fmt.Errorf("baseline write+fsync: %w", err)
		}
	}
	return time.Since(start), total, nil
}

// hashFiles computes BLAKE3 over the files' bytes and returns how long it
// took (reads come from the page cache after the scenario wrote them).
func hashFiles(files []string) (time.Duration, int64, error) {
	buf := make([]byte, 1<<20)
	var total int64
	start := time.Now()
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return 0, 0, err
		}
		h := blake3.New(32, nil)
		n, err := io.CopyBuffer(h, f, buf)
		f.Close()
		if err != nil {
			return 0, 0, err
		}
		_ = h.Sum(nil)
		total += n
	}
	return time.Since(start), total, nil
}

// ceilings runs the three baselines on files and records them in rc:
// tcp, disk and BLAKE3 MiB/s, and the ceiling (the slower of tcp and disk).
func ceilings(rc *runCtx, files []string, scratch string) (ceiling float64, err error) {
	dt, n, err := tcpCopy(files)
	if err != nil {
		return 0, err
	}
	tcp := mibps(n, dt)
	dd, n2, err := diskCopy(files, scratch)
	if err != nil {
		return 0, err
	}
	disk := mibps(n2, dd)
	dh, n3, err := hashFiles(files)
	if err != nil {
		return 0, err
	}
	rc.add("baseline tcp copy", "MiB/s", tcp)
	rc.add("baseline write+fsync", "MiB/s", disk)
	rc.add("baseline blake3", "MiB/s", mibps(n3, dh))
	return min(tcp, disk), nil
}
