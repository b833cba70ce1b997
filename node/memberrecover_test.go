package node

import (
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// A membership log whose genesis is garbled leaves the device knowing no
// member. Status must say so (an error coded membership-lost, never
// in-sync) and the device must not author: it cannot tell who else holds
// its log.
func TestDamagedMembershipIsReported(t *testing.T) {
	h, _ := testHome(t)
	hvs, err := h.Vaults()
	if err != nil || len(hvs) != 1 {
		t.Fatalf("vaults: %v, %v", hvs, err)
	}
	path := filepath.Join(hvs[0].DBDir(), "member", "members.log")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 16; i < 24; i++ {
		data[i] ^= 0xa5
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := New(Config{Home: h, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: "-",
		NoWatcher: true, NoDHT: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		n.closeVaults()
		n.host.Close()
	}()
	v := n.vaultsNow()[0]
	if !v.membershipLost() {
		t.Fatal("membership not reported lost")
	}
	if !v.tail.Hold(nil) {
		t.Fatal("authoring open with the membership lost")
	}
	v.mu.Lock()
	v.scanned = true // as after the first scan
	v.mu.Unlock()
	fs := n.Status().Folders[0]
	if fs.State != "error" {
		t.Fatalf("state %q, want error", fs.State)
	}
	found := false
	for _, e := range fs.Errors {
		found = found || e.Code == api.CodeMembershipLost
	}
	if !found {
		t.Fatalf("errors %+v, want one coded %s", fs.Errors, api.CodeMembershipLost)
	}
}

// Two admins who change the membership at the same moment fork it. The
// device that is sent the other admin's record must not go on showing
// in-sync: its folder is in error with code membership-forked, and the
// record it holds stands.
func TestMembershipForkIsReported(t *testing.T) {
	n := quietNode(t)
	v := n.vaultsNow()[0]
	second, err := keys.GenerateIdentity(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.admit(second.ID(), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Members().SetRole(api.RoleRequest{Device: second.ID().String(), Admin: true}); err != nil {
		t.Fatal(err)
	}
	// The second admin signs on the head both hold...
	st := member.NewState(v.id)
	for _, r := range v.roster.Records() {
		if err := st.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	theirs := st.Next(second, member.Record{Op: member.OpAddRelay, Relay: "/ip4/127.0.0.1/tcp/9/p2p/" + second.ID().String()}, 1)
	// ...while this device signs another record there.
	if _, err := n.Members().ChangeSettings(api.SettingsRequest{MembersInvite: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	v.scanned = true // as after the first scan
	v.mu.Unlock()
	if fs := n.Status().Folders[0]; fs.State == "error" {
		t.Fatalf("error before any fork: %+v", fs.Errors)
	}
	if err := v.ingestMember(theirs.Encode()); err != nil {
		t.Fatal(err)
	}
	fs := n.Status().Folders[0]
	if fs.State != "error" || len(fs.Errors) == 0 || fs.Errors[0].Code != api.CodeMembershipForked {
		t.Fatalf("state %q, errors %+v; want error coded %s", fs.State, fs.Errors, api.CodeMembershipForked)
	}
	if s := n.Members().Settings()[0]; !s.MembersInvite || len(v.roster.Relays()) != 0 {
		t.Fatalf("the record held here must stand: %+v, relays %v", s, v.roster.Relays())
	}
}

func ptr[T any](v T) *T { return &v }

// A peer's LogStatus that says it holds more in full wakes the reconcile
// loop at once: a relay that offered an entry before it had the entry's
// chunks (it fetches them from the author afterwards) has them now, and a
// fetch that failed for want of them is retried without waiting for the
// reconcile tick (measured: docs/benchmarks.md, "B2 through the relay
// behind NATs"). A status that says nothing new does not.
func TestHeldGrowthKicksReconcile(t *testing.T) {
	n := quietNode(t)
	v := n.vaultsNow()[0]
	drain := func() bool {
		select {
		case <-v.kicked:
			return true
		default:
			return false
		}
	}
	drain()
	author := keys.DeviceID{7}
	pull := &logPull{v: v, dev: keys.DeviceID{9}, relay: true}
	status := func(seq uint64) {
		t.Helper()
		if err := pull.Status(wire.LogStatus{Vector: []wire.VectorEntry{{Author: author, Seq: seq}}}); err != nil {
			t.Fatal(err)
		}
	}
	status(3)
	if !drain() {
		t.Fatal("a first status holding entries did not kick")
	}
	status(3)
	if drain() {
		t.Fatal("the same status again kicked")
	}
	status(4)
	if !drain() {
		t.Fatal("a status holding one more entry did not kick")
	}
}

// quietNode opens a node on a test home without running it (no watcher,
// no DHT, no API, no log), closed when the test ends.
func quietNode(t *testing.T) *Node {
	t.Helper()
	h, _ := testHome(t)
	n, err := New(Config{Home: h, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, APIAddr: "-",
		NoWatcher: true, NoDHT: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.closeVaults()
		n.host.Close()
	})
	return n
}
