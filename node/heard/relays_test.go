package heard

import (
	"testing"
	"time"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// A quota reported full is said once, keeps the time it was first
// reported full while it stays full, and starts over once it had room.
func TestRelayQuotaFullSince(t *testing.T) {
	var r RelayReports
	relay := keys.DeviceID{9}
	t0 := time.Date(2026, 12, 7, 22, 0, 0, 0, time.UTC)
	full := wire.RelayStatus{Full: true, Bytes: 10, BytesLimit: 10}
	if r.SetQuota(relay, RelayQuota{Status: wire.RelayStatus{Bytes: 5, BytesLimit: 10}, At: t0}) {
		t.Error("a quota with room reported as newly full")
	}
	if !r.SetQuota(relay, RelayQuota{Status: full, At: t0.Add(time.Minute)}) {
		t.Error("a quota that became full was not reported as newly full")
	}
	if r.SetQuota(relay, RelayQuota{Status: full, At: t0.Add(2 * time.Minute)}) {
		t.Error("a quota that stayed full was reported again")
	}
	q, ok := r.Quota(relay)
	if !ok || !q.FullSince.Equal(t0.Add(time.Minute)) || !q.At.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("after two full reports: %+v", q)
	}
	r.SetQuota(relay, RelayQuota{Status: wire.RelayStatus{Bytes: 2, BytesLimit: 10}, At: t0.Add(3 * time.Minute)})
	if q, _ := r.Quota(relay); !q.FullSince.IsZero() {
		t.Errorf("full since %v after the relay had room again", q.FullSince)
	}
	if !r.SetQuota(relay, RelayQuota{Status: full, At: t0.Add(4 * time.Minute)}) {
		t.Error("full again after room: not reported")
	}
	if q, _ := r.Quota(relay); !q.FullSince.Equal(t0.Add(4 * time.Minute)) {
		t.Errorf("full again since %v, want the new report's time", q.FullSince)
	}
	if _, ok := r.Quota(keys.DeviceID{8}); ok {
		t.Error("a relay that said nothing has a quota")
	}
}

// What a device holds is, per author, the most that it or any relay said;
// what a relay says of this device itself is not taken.
func TestRelayHolds(t *testing.T) {
	var r RelayReports
	self, d, a, b := keys.DeviceID{1}, keys.DeviceID{2}, keys.DeviceID{3}, keys.DeviceID{4}
	r1, r2 := keys.DeviceID{8}, keys.DeviceID{9}
	r.NoteHolds(r1, self, wire.Holds{Devices: []wire.DeviceHolds{
		{Device: d, Vector: wire.VectorOf(protocol.Vector{a: 5, b: 1})},
		{Device: self, Vector: wire.VectorOf(protocol.Vector{a: 99})},
	}})
	r.NoteHolds(r2, self, wire.Holds{Devices: []wire.DeviceHolds{{Device: d, Vector: wire.VectorOf(protocol.Vector{b: 7})}}})
	direct := protocol.Vector{a: 6}
	got := r.Holds(d, direct)
	if got[a] != 6 || got[b] != 7 || len(got) != 2 {
		t.Errorf("holds %v, want a:6 b:7", got)
	}
	if len(direct) != 1 || direct[a] != 6 {
		t.Errorf("the direct vector was changed: %v", direct)
	}
	if got := r.Holds(self, nil); len(got) != 0 {
		t.Errorf("what a relay said of this device was taken: %v", got)
	}
}
