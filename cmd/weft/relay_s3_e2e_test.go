package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/internal/s3test"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/relay"
)

// TestRelayChunksInS3: a relay keeps its chunks in a real S3 server
// (versitygw on 127.0.0.1). A writes 200 notes and a 20 MiB file and
// stops; B, offline until then, gets everything from the relay alone.
// The relay is stopped and its local chunk index deleted (docs/relay.md:
// derived state, rebuilt from the objects), restarted on the same
// address, and C, offline until now, gets everything from it alone. The
// bucket holds no file name and no plaintext.
func TestRelayChunksInS3(t *testing.T) {
	srv := s3test.Start(t)
	srv.Client(t) // sets AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for the relay
	s3flags := []string{"--chunks", "s3://weft-relay/relays/one", "--s3-endpoint", srv.URL, "--s3-path-style"}
	rl := startRelay(t, "", append([]string{"--listen", "/ip4/127.0.0.1/tcp/0"}, s3flags...)...)

	a, b, c := newDevice(t, "a"), newDevice(t, "b"), newDevice(t, "c")
	a.must("init", a.folder, "--relay", rl.addr())
	a.up()
	for _, d := range []*device{b, c} {
		out := a.must("invite")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		d.must("join", lines[len(lines)-1], d.folder) // each starts later
	}

	rng := rand.New(rand.NewPCG(21, 21))
	var needles [][]byte
	for i := range 200 {
		body := fmt.Appendf(nil, "# note %d %x\n%s\n", i, rng.Uint64(), strings.Repeat("private thoughts ", 20+i%50))
		a.write(fmt.Sprintf("notes/n-%03d.md", i), body)
	}
	big := randBytes(rng, 20<<20)
	a.write("media/talk-recording.bin", big)
	needles = append(needles, []byte("private thoughts"), []byte("n-001"), []byte("talk-recording"), big[5<<20:5<<20+32])
	waitStatus(t, a, 3*time.Minute, func(st api.Status) error {
		if f := st.Folders[0]; f.Files != 201 || f.Unsafe != 0 {
			return fmt.Errorf("%d files, unsafe %d; want 201 and 0 (the relay holds everything)", f.Files, f.Unsafe)
		}
		return nil
	})
	a.stop()
	want, err := tree(a.folder)
	if err != nil {
		t.Fatal(err)
	}

	b.up()
	waitTree(t, b, want, 3*time.Minute)
	b.stop()

	// Restart the relay without its chunk index: only its key and the
	// logs are kept.
	rl.stop()
	idx, _ := filepath.Glob(filepath.Join(rl.home, "replicas", "*", relay.S3IndexDir))
	if len(idx) != 1 {
		t.Fatalf("found %d chunk indexes in the relay's home, want 1", len(idx))
	}
	for _, d := range idx {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	packs, _ := filepath.Glob(filepath.Join(rl.home, "replicas", "*", "chunks"))
	if len(packs) != 0 {
		t.Fatalf("the relay kept pack files (%v) with --chunks s3://", packs)
	}
	rl2 := startRelayHome(t, "", rl.home, append([]string{"--listen", rl.addr()[:strings.Index(rl.addr(), "/p2p/")], "--metrics", "127.0.0.1:0"}, s3flags...)...)
	if rl2.addr() != rl.addr() {
		t.Fatalf("relay restarted at %s, want %s", rl2.addr(), rl.addr())
	}
	c.up()
	waitTree(t, c, want, 3*time.Minute)
	// The chunks C got were read from the objects (the rebuilt index
	// listed them and read each once).
	m, err := scrapeLocalMetrics(rl2.metrics)
	if err != nil {
		t.Fatal(err)
	}
	requests := func(kind string) float64 {
		var n float64
		for series, v := range m {
			if strings.HasPrefix(series, `weft_relay_vault_object_requests_total{kind="`+kind+`"`) {
				n += v
			}
		}
		return n
	}
	list, get := requests("list"), requests("get")
	t.Logf("after the restart: %v LISTs and %v GETs to serve 200 notes and a 20 MiB file", list, get)
	if list < 1 || get < 1 {
		t.Errorf("object storage requests after the restart: list %v, get %v; want both", list, get)
	}
	// 320 chunks of about 64 KiB in a few dozen objects: read a window at
	// a time, not one GET each (241 GETs when the relay fetched in random
	// order and read chunk by chunk; 75 on 2026-12-07).
	if get > 200 {
		t.Errorf("%v GETs to serve a 20 MiB file of 64 KiB chunks after the restart, want well under one per chunk", get)
	}

	// The bucket holds no name and no plaintext.
	objects := 0
	err = filepath.WalkDir(srv.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		objects++
		for _, n := range needles {
			if bytes.Contains(data, n) || strings.Contains(p, string(n)) {
				t.Errorf("object %s contains %q", p, n[:min(len(n), 40)])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if objects == 0 {
		t.Fatal("the bucket is empty")
	}
	t.Logf("%d objects in the bucket for 200 notes and a 20 MiB file", objects)
}

// waitTree waits until d's folder is want.
func waitTree(t *testing.T, d *device, want map[string]string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		got, err := tree(d.folder)
		if err == nil && sameTree(want, got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not get the folder from the relay:\n%s\nlog:\n%s", d.name, diffTree(want, got), d.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
