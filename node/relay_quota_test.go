package node

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/relay"
)

// testRelay runs a relay on loopback for the test's lifetime.
func testRelay(t *testing.T, cfg relay.Config) *relay.Relay {
	t.Helper()
	cfg.Home = filepath.Join(t.TempDir(), "relay")
	cfg.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.NoDHT = true
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	r, err := relay.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("relay run: %v", err)
		}
	})
	return r
}

// waitUntil polls cond every 20 ms until it returns nil or limit passes.
func waitUntil(t *testing.T, limit time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("after %s: %v", limit, err)
}

// TestRelayQuota: a relay whose per-vault entry quota is reached keeps
// what it stores, takes nothing more, and tells the device, whose unsafe
// count stays truthful (the entries the relay refused are not safe).
func TestRelayQuota(t *testing.T) {
	r := testRelay(t, relay.Config{Quota: relay.Quota{Entries: 3, Bytes: 1 << 30}})
	n, folder := testNode(t)
	if err := n.API().ChangeRelay(keys.VaultID{}, r.Addrs()[0], false); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 5 {
		if err := os.WriteFile(filepath.Join(folder, fmt.Sprintf("note-%d.md", i)), fmt.Appendf(nil, "note %d", i), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := n.Scan(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 30*time.Second, func() error {
		rs := n.API().Relays()
		if len(rs) != 1 || rs[0].Quota == nil {
			return fmt.Errorf("relay has not reported: %+v", rs)
		}
		if q := rs[0].Quota; !q.Full || q.Entries != 3 || q.EntriesLimit != 3 {
			return fmt.Errorf("quota %+v, want full with 3 of 3 entries", *q)
		}
		if rs[0].Holds != 3 {
			return fmt.Errorf("relay holds %d entries, want 3", rs[0].Holds)
		}
		return nil
	})
	st := n.Status()
	// The watcher may record a file in an entry of its own besides Scan's,
	// so count the entries actually written.
	head := n.vaultsNow()[0].db.Head(n.ID()).Seq
	if head < 5 {
		t.Fatalf("head %d, want at least 5 entries", head)
	}
	if got := st.Folders[0].Unsafe; got != head-3 {
		t.Errorf("unsafe %d, want %d (%d entries written, the relay holds three)", got, head-3, head)
	}
	var relayPeer *api.PeerStatus
	for i, p := range st.Peers {
		if p.Role == "relay" {
			relayPeer = &st.Peers[i]
		}
	}
	if relayPeer == nil || relayPeer.Connection == "offline" {
		t.Fatalf("status lists the relay as %+v, want a connected peer with role relay", relayPeer)
	}

	// The truth about it: the folder is out-of-sync with an error naming
	// the relay, nothing is counted as on its way to it, and doctor calls
	// it a problem. Before: in-sync, "being sent", healthy.
	waitUntil(t, 30*time.Second, func() error {
		st = n.Status()
		if st.Folders[0].Pending > 0 {
			return fmt.Errorf("still %d pending", st.Folders[0].Pending)
		}
		return nil
	})
	f := st.Folders[0]
	var item *api.PathMessage
	for i, e := range f.Errors {
		if e.Code == api.CodeRelayFull {
			item = &f.Errors[i]
		}
	}
	if f.State != "out-of-sync" || item == nil || item.Peer != relayPeer.ID || item.Since == nil || !strings.Contains(item.Reason, fmt.Sprintf("%d entries it lacks", head-3)) {
		t.Fatalf("status with a full relay lacking %d entries: state %s, errors %+v; want out-of-sync with a relay-full item naming %s", head-3, f.State, f.Errors, relayPeer.ID)
	}
	if f.PendingUpload != 0 {
		t.Errorf("pending_upload %d: entries a full relay refuses are not on their way", f.PendingUpload)
	}
	d, err := n.API().Diagnose(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Healthy || !slices.Contains(kinds(d.Findings), "problem:relay-full") || slices.Contains(kinds(d.Findings), "info:uploading") {
		t.Fatalf("doctor with a full relay: healthy=%v findings %v; want problem:relay-full and nothing said to be uploading", d.Healthy, kinds(d.Findings))
	}
}
