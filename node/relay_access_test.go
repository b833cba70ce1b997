package node

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/claims"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/relay"
)

// startRelayAt runs a real relay with home dir listening on listen until
// the returned stop is called (or the test ends).
func startRelayAt(t *testing.T, home, listen string) (r *relay.Relay, stop func()) {
	t.Helper()
	r, err := relay.New(relay.Config{Home: home, ListenAddrs: []string{listen}, NoDHT: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("relay run: %v", err)
		}
	}
	t.Cleanup(stop)
	return r, stop
}

// freeTCPAddr returns a loopback multiaddr with a port free right now.
func freeTCPAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", l.Addr().(*net.TCPAddr).Port)
}

// TestHonestRelayRaisesNoAlarm: the rollback and withholding checks do not
// fire on an honest relay, also across a restart of the relay (its held
// vector is recomputed from its store and must not go back).
func TestHonestRelayRaisesNoAlarm(t *testing.T) {
	home := filepath.Join(t.TempDir(), "relay")
	listen := freeTCPAddr(t)
	r, stop := startRelayAt(t, home, listen)
	n, folderPath := testNode(t)
	evs := recordEvents(t, n)
	if err := n.API().ChangeRelay(keys.VaultID{}, r.Addrs()[0], false); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v := n.vaultsNow()[0]
	big := make([]byte, 3<<20) // chunked, so the relay must fetch chunks before it holds the entry
	for i := range big {
		big[i] = byte(i * 7)
	}
	for i := range 4 {
		content := fmt.Appendf(nil, "note %d", i)
		if i == 3 {
			content = big
		}
		if err := os.WriteFile(filepath.Join(folderPath, fmt.Sprintf("note-%d", i)), content, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := n.Scan(ctx); err != nil {
			t.Fatal(err)
		}
	}
	head := v.db.Head(n.ID()).Seq
	safe := func() bool {
		rs := n.API().Relays()
		return len(rs) == 1 && rs[0].Holds == head && v.unsafeCount() == 0
	}
	waitFor(t, "the relay to hold every entry", safe)

	stop()
	startRelayAt(t, home, listen)
	// A new entry after the restart: the relay, reconnected, reports a
	// status from its recomputed store, and then one that holds it.
	if err := os.WriteFile(filepath.Join(folderPath, "after"), []byte("after the restart"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	head = v.db.Head(n.ID()).Seq
	waitFor(t, "the restarted relay to hold every entry", safe)
	if ev, ok := evs.find(func(ev api.Event) bool { return ev.Kind == claims.KindRollback || ev.Kind == claims.KindWithheld }); ok {
		t.Fatalf("an honest relay raised %+v", ev)
	}
	if rbs := n.RelayRollbacks(); len(rbs) != 0 {
		t.Fatalf("RelayRollbacks with an honest relay: got %+v, want none", rbs)
	}
}
