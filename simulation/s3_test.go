package simulation

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"
)

// TestS3Small runs S3 at `make test` size: 6 devices (d1, d3, d5 behind
// a NAT) and a relay, S1's calm mix.
func TestS3Small(t *testing.T) {
	cfg := Config{Scenario: "S3", Seed: 1, Devices: 6, Steps: 40, Duration: 4 * time.Second, Probs: CalmProbs,
		Link: LinkProps{Latency: 5 * time.Millisecond, Bandwidth: 10 << 20}, Settle: 60 * time.Second, Dir: simDir(t)}
	if testing.Verbose() {
		cfg.Log = os.Stderr
	}
	res, err := RunS3(context.Background(), cfg)
	if err != nil {
		t.Fatalf("seed %d: %v", cfg.Seed, err)
	}
	t.Logf("S3 seed %d: %d writes (%d acked), observations %d/%d missing, converged in %.1fs, %d of %d pairs direct, relay sent %d received %d bytes",
		res.Seed, res.Writes, res.Acked, res.ObservationsMissing, res.ObservationsExpected, res.ConvergeSeconds,
		res.DirectPairs, res.PossiblePairs, res.RelayBytesSent, res.RelayBytesReceived)
	for _, f := range res.Failures {
		t.Error(f)
	}
	if got, want := res.Natted, 3; got != want {
		t.Errorf("got %d devices behind a NAT, want %d", got, want)
	}
	// 15 pairs, 3 of them between two NAT'ed devices, which this model
	// never connects.
	if got, want := res.PossiblePairs, 15; got != want {
		t.Errorf("got %d possible pairs, want %d", got, want)
	}
	if res.DirectPairs > 12 {
		t.Errorf("got %d direct pairs, want at most 12 (two NAT'ed devices connected directly)", res.DirectPairs)
	}
	if res.RelayBytesSent == 0 || res.RelayBytesReceived == 0 {
		t.Errorf("got relay bytes sent %d, received %d, want both > 0", res.RelayBytesSent, res.RelayBytesReceived)
	}
	if !res.OK() {
		t.Logf("replay: weft sim S3 --seed %d --devices %d --until STEP", res.Seed, cfg.Devices)
	}
}

// TestS3RelayCarriesNATToNAT checks the model S3 rests on: two NAT'ed
// devices never connect, and with every link between devices cut, a
// write on one still reaches the other through the relay's store.
func TestS3RelayCarriesNATToNAT(t *testing.T) {
	cfg := Config{Scenario: "S3", Devices: 4, Dir: t.TempDir(), Link: LinkProps{Latency: time.Millisecond}}
	ctx := context.Background()
	c, err := buildS3Cluster(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d1, d3 := c.Device(1), c.Device(3)
	if !d1.Natted || !d3.Natted || c.Device(0).Natted || c.Device(2).Natted {
		t.Fatalf("got natted %v %v %v %v, want false true false true", c.Device(0).Natted, d1.Natted, c.Device(2).Natted, d3.Natted)
	}
	if c.Net.Linked(d1.Peer, d3.Peer) {
		t.Fatal("got a link between two NAT'ed devices, want none")
	}
	if err := c.Net.Connect(ctx, d1.Peer, d3.Peer); err == nil {
		t.Fatal("got a direct connection between two NAT'ed devices, want it refused")
	}
	rl := c.Relay()
	for _, e := range c.Edges() {
		if err := c.Net.Cut(c.Device(e[0]).Peer, c.Device(e[1]).Peer); err != nil {
			t.Fatal(err)
		}
	}
	// Each device reaches the relay (the NAT'ed ones by dialling out).
	for i := range 4 {
		waitFor(t, 30*time.Second, func() bool { return c.Net.Connected(c.Device(i).Peer, rl.Peer) }, "device %d connected to the relay", i)
	}
	before := rl.Relay.BytesSent()
	content := []byte("weft-sim w0.0 d1\nthrough the relay\n")
	if err := writeFile(d1.FS, "note.txt", content); err != nil {
		t.Fatal(err)
	}
	if err := d1.Node().Scan(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, func() bool {
		b, ok := readFile(d3.FS, "note.txt")
		return ok && bytes.Equal(b, content)
	}, "note.txt from d1 on d3")
	for _, p := range [][2]int{{1, 3}, {0, 1}, {0, 3}, {2, 3}} {
		if c.Net.Connected(c.Device(p[0]).Peer, c.Device(p[1]).Peer) {
			t.Errorf("got d%d and d%d connected across a cut, want not", p[0], p[1])
		}
	}
	if got := rl.Relay.BytesSent() - before; got < int64(len(content)) {
		t.Errorf("got %d bytes sent by the relay for the write, want at least %d", got, len(content))
	}
}

// waitFor polls cond every 20 ms until it holds or limit passes (a
// generous bound: the test does not depend on how fast it holds).
func waitFor(t *testing.T, limit time.Duration, cond func() bool, what string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for "+what, append([]any{limit}, args...)...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
