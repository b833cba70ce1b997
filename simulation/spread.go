package simulation

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"time"
)

// SpreadConfig is one edit reaching every device (S2, S5).
type SpreadConfig struct {
	Scenario string
	Seed     uint64
	Devices  int
	// Payload is the edit's size in bytes (default 256 KiB: chunked, so
	// the content travels once per device and the log entry is small).
	Payload int
	// Degree links each device to about Degree others (0: every pair).
	Degree int
	Link   LinkProps
	// Timeout bounds the wait for the last device; default 5 minutes.
	Timeout time.Duration
	// Pair builds the cluster by running the pairing protocol once per
	// device (buildCluster) instead of batch setup (batchsetup.go).
	Pair bool
	Dir  string
	Log  io.Writer
}

// Spread writes one file on device 0 and measures how long it takes to
// reach every other device, the bytes the nodes sent for it, and memory
// per node.
func Spread(ctx context.Context, cfg SpreadConfig) (*Result, error) {
	if cfg.Payload <= 0 {
		cfg.Payload = 256 << 10
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "weft-sim-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}
	fmt.Fprintf(cfg.Log, "%s: seed %d, %d devices, one %d-byte edit\n", cfg.Scenario, cfg.Seed, cfg.Devices, cfg.Payload)
	start := time.Now()
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	ccfg := Config{Seed: cfg.Seed, Devices: cfg.Devices, Degree: cfg.Degree, Link: cfg.Link, Dir: cfg.Dir, Log: cfg.Log}
	var c *Cluster
	var err error
	if cfg.Pair {
		c, _, err = buildCluster(ctx, ccfg, cfg.Devices)
	} else {
		c, err = buildBatchCluster(ctx, ccfg, cfg.Devices)
	}
	if err != nil {
		return nil, err
	}
	defer c.Close()
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	res := &Result{Scenario: cfg.Scenario, Seed: cfg.Seed, Devices: cfg.Devices, Steps: 1}
	res.MemPerNode = float64(int64(ms1.HeapInuse)-int64(ms0.HeapInuse)) / float64(cfg.Devices)
	res.SetupSeconds = time.Since(start).Seconds()
	rss, _ := procMem()
	fmt.Fprintf(cfg.Log, "%d devices up in %.1fs, %.2f MiB heap per node (HeapInuse), %.2f MiB RSS per node (whole process %.0f MiB)\n",
		cfg.Devices, res.SetupSeconds, res.MemPerNode/(1<<20), float64(rss)/float64(cfg.Devices)/(1<<20), float64(rss)/(1<<20))

	// Let the first syncs (membership, empty logs) finish, and count the
	// bytes they cost, so only the edit's bytes are measured.
	time.Sleep(2 * time.Second)
	before := totalTraffic(c)

	content := Content(cfg.Seed, 0, 0, 0, cfg.Payload)
	const path = "docs/edit.bin"
	d0 := c.Device(0)
	watch := watchArrivals(c, cfg.Devices, path)
	defer watch.close()
	if err := writeFile(d0.FS, path, content); err != nil {
		return nil, err
	}
	scanStart := time.Now()
	if err := d0.Node().Scan(ctx); err != nil {
		return nil, err
	}
	t0 := time.Now()
	arrived := make([]bool, cfg.Devices)
	arrived[0] = true
	left := cfg.Devices - 1
	deadline := t0.Add(cfg.Timeout)
	// The sampler reads every device's folder each pass; the longest pass
	// bounds how late an arrival can be seen, so it is reported.
	passes, longest := 0, time.Duration(0)
	var atMs []float64 // arrival times, from the nodes' events where they came
	for left > 0 && time.Now().Before(deadline) {
		passStart := time.Now()
		passes++
		for i := 1; i < cfg.Devices; i++ {
			if arrived[i] {
				continue
			}
			if b, ok := readFile(c.Device(i).FS, path); ok && bytes.Equal(b, content) {
				arrived[i] = true
				left--
				at := time.Now()
				if t, ok := watch.appliedAt(i); ok && t.Before(at) {
					at = t
				}
				atMs = append(atMs, max(0, float64(at.Sub(t0).Microseconds())/1000))
			}
		}
		longest = max(longest, time.Since(passStart))
		time.Sleep(5 * time.Millisecond)
	}
	res.ConvergeSeconds = time.Since(t0).Seconds()
	slices.Sort(atMs)
	for k, ms := range atMs {
		res.LatenciesMs = append(res.LatenciesMs, ms)
		res.Convergence = append(res.Convergence, Point{T: ms / 1000, Share: float64(k+2) / float64(cfg.Devices)})
	}
	if len(atMs) > 0 && left == 0 {
		res.ConvergeSeconds = atMs[len(atMs)-1] / 1000
	}
	lastEntry, gotEntry := watch.lastEntry()
	fmt.Fprintf(cfg.Log, "edit: device 0's scan took %v; the entry reached %d devices, the last %.2fs after the scan; sampler: %d passes, longest %v\n",
		t0.Sub(scanStart).Round(time.Millisecond), gotEntry, lastEntry.Sub(t0).Seconds(), passes, longest.Round(time.Millisecond))
	res.Converged = left == 0
	if !res.Converged {
		res.Failures = append(res.Failures, fmt.Sprintf("seed %d: the edit reached %d of %d devices within %v", cfg.Seed, cfg.Devices-1-left, cfg.Devices-1, cfg.Timeout))
		describeMissing(cfg.Log, c, arrived)
	}
	// Wait for the tail of the traffic (statuses, duplicate offers).
	time.Sleep(time.Second)
	after := totalTraffic(c)
	res.BytesSent = after.bytes - before.bytes
	res.MsgsSent = after.msgs - before.msgs
	res.MsgsPerNode = float64(res.MsgsSent) / float64(cfg.Devices)
	res.Writes, res.Acked, res.BytesChanged = 1, 1, int64(len(content))
	res.BytesPerByte = float64(res.BytesSent) / float64(int64(len(content))*int64(cfg.Devices-1))
	res.ObservationsExpected = cfg.Devices - 1
	res.ObservationsMissing = left
	setPercentiles(res)
	res.WallSeconds = time.Since(start).Seconds()
	rss, peak := procMem()
	fmt.Fprintf(cfg.Log, "after the edit: RSS %.0f MiB, peak %.0f MiB (%.2f MiB per node)\n", float64(rss)/(1<<20), float64(peak)/(1<<20), float64(peak)/float64(cfg.Devices)/(1<<20))
	return res, nil
}

func totalTraffic(c *Cluster) counters {
	var t counters
	for i := range c.Len() {
		if n := c.Device(i).Node(); n != nil {
			x := nodeTraffic(n)
			t.bytes += x.bytes
			t.msgs += x.msgs
		}
	}
	return t
}
