package claims

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/heard"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/vaultdb"
)

var (
	relay  = keys.DeviceID{1}
	author = keys.DeviceID{2}
	vault  = keys.VaultID{9}
)

// checker is a Checker over a real vault database in dir (opened fresh, as
// after a restart), with its events collected and nothing held back
// unless ahead says so.
func checker(t *testing.T, dir string, ahead map[keys.DeviceID]uint64) (*Checker, *[]api.Event) {
	t.Helper()
	db, _, err := vaultdb.Open(dir, vault)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var events []api.Event
	return &Checker{
		Folder: "/notes", Store: db, Heard: &heard.Holdings{},
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Publish: func(ev api.Event) { events = append(events, ev) },
		Now:     func() time.Time { return time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC) },
		FirstAhead: func(a keys.DeviceID, after, upto uint64) uint64 {
			if n := ahead[a]; n >= after && n <= upto {
				return n
			}
			return 0
		},
		IsRelay: func(d keys.DeviceID) bool { return d == relay },
		Relays:  func() []keys.DeviceID { return []keys.DeviceID{relay} },
	}, &events
}

// TestRelayRollback: a relay saying it holds less than it said before is
// reported once per statement (event, log, a record Rollbacks lists),
// also across a restart (what it said is durable), and its new, lower
// word becomes the mark; a statement that only grows reports nothing.
func TestRelayRollback(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	c, events := checker(t, dir, nil)
	c.RelayHolds(relay, protocol.Vector{author: 5})
	c.RelayHolds(relay, protocol.Vector{author: 7})
	if len(*events) != 0 || len(c.Rollbacks()) != 0 {
		t.Fatalf("a growing statement: %d events, %d rollbacks; want none", len(*events), len(c.Rollbacks()))
	}
	c.RelayHolds(relay, protocol.Vector{author: 4})
	if len(*events) != 1 || (*events)[0].Kind != KindRollback || (*events)[0].Seq != 4 {
		t.Fatalf("events after a rollback: %+v", *events)
	}
	rbs := c.Rollbacks()
	if len(rbs) != 1 || rbs[0].Had != 7 || rbs[0].Now != 4 || rbs[0].Relay != relay.String() || rbs[0].Folder != "/notes" {
		t.Fatalf("rollbacks: %+v", rbs)
	}
	if got := c.Heard.Of(relay)[author]; got != 4 {
		t.Fatalf("the relay's word after the rollback: %d, want 4", got)
	}
	c.Store.(*vaultdb.DB).Close()

	// After a restart: what the relay said last (4) is the mark, so 3 is
	// a rollback again and 6 is not.
	c, events = checker(t, dir, nil)
	c.RelayHolds(relay, protocol.Vector{author: 3})
	if len(*events) != 1 || (*events)[0].Kind != KindRollback {
		t.Fatalf("a rollback across a restart: events %+v", *events)
	}
	c.RelayHolds(relay, protocol.Vector{author: 6})
	if len(*events) != 1 {
		t.Fatalf("growth after a rollback reported: %+v", *events)
	}
	if rbs := c.Rollbacks(); len(rbs) != 1 || rbs[0].Had != 4 || rbs[0].Now != 3 {
		t.Fatalf("the latest rollback: %+v", rbs)
	}
}

// TestWithheld: a peer claiming entries of an author past this device's
// head while a later one is held back here skipped them: reported once per
// gap, by who it is; a claim with nothing held back reports nothing.
func TestWithheld(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	peer := keys.DeviceID{3}
	c, events := checker(t, dir, map[keys.DeviceID]uint64{author: 3})
	c.CheckWithheld(peer, protocol.Vector{keys.DeviceID{4}: 10}) // nothing held back of that author
	if len(*events) != 0 {
		t.Fatalf("a claim with no gap: %+v", *events)
	}
	c.CheckWithheld(peer, protocol.Vector{author: 5})
	c.CheckWithheld(peer, protocol.Vector{author: 5}) // the same gap again
	if len(*events) != 1 || (*events)[0].Kind != KindWithheld || (*events)[0].Seq != 1 || (*events)[0].Peer != peer.String() {
		t.Fatalf("events: %+v, want one withheld from seq 1", *events)
	}
	c.CheckWithheld(relay, protocol.Vector{author: 5})
	if len(*events) != 2 || (*events)[1].Peer != relay.String() {
		t.Fatalf("the relay's gap: %+v", *events)
	}
}
