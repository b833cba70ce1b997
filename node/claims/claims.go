package claims

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/heard"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/vaultdb"
)

// What a relay says it holds (its LogStatus: per author, the highest
// sequence it holds in full) can only grow: entries are never removed from
// a log, and a version's chunks leave a store only once the version is
// superseded, which keeps the entry held. A relay that reports less than it
// reported before has lost data (a disk restored from an old backup, a
// replica deleted by hand) or is rolling the vault back on purpose. Either
// way its earlier word is void: this device stops counting the entries the
// relay no longer claims as safe there, says so (a warning in the log, an
// "error" event of kind "relay-rollback", a record Rollbacks returns), and
// from then on takes the relay's new, lower statement as the mark to
// compare against. Later statements count again as they grow: a relay is
// trusted for availability only, and an honest relay that lost data
// re-fetches it.
//
// What a relay said is kept durably (vaultdb's acknowledged vectors, every
// author), so a rollback across a restart of this device is caught too.
//
// A second check runs on every LogStatus from any peer: the answerer sends
// every entry the opener lacks before its status, so a status that claims
// an entry this device still lacks while it holds a later one of the same
// author (held back, waiting for the gap) means the peer skipped that
// entry. That is reported once per gap ("error" event of kind "withheld").
// A peer that drops the last entries of a log and claims them anyway is
// not told from one that is about to push them, so it is not reported.

// Event kinds (Event.Kind of an EventError) the checker publishes.
const (
	KindRollback = "relay-rollback"
	KindWithheld = "withheld"
)

// ErrWithheld names a peer that skipped an entry it says it holds.
var ErrWithheld = errors.New("peer says it holds entries it did not send")

// Store is what the checker keeps durably: the vault's database.
type Store interface {
	Acked(peer keys.DeviceID) (map[keys.DeviceID]uint64, error)
	Commit(u *vaultdb.Update) error
	Meta(name string) ([]byte, bool, error)
	Head(author keys.DeviceID) entry.Head
}

// Checker checks one vault's peers' statements.
type Checker struct {
	Folder string // the vault's folder, named in events and records
	Store  Store
	// Heard is what each peer said it holds; RelayHolds records a relay's
	// statement there.
	Heard   *heard.Holdings
	Log     *slog.Logger
	Publish func(api.Event)
	Now     func() time.Time
	// FirstAhead is the first entry of author held back here after
	// sequence after, up to upto (0: none); the caller takes the lock
	// that guards what it reads (logview.View.FirstAhead).
	FirstAhead func(author keys.DeviceID, after, upto uint64) uint64
	// IsRelay says whether a device is a relay of the vault; Relays lists
	// them.
	IsRelay func(keys.DeviceID) bool
	Relays  func() []keys.DeviceID
}

// rollbackMetaKey names the vaultdb metadata value holding the last
// rollback of relay d.
func rollbackMetaKey(d keys.DeviceID) string { return "relay-rollback/" + d.String() }

// RelayHolds records what relay d says it holds: it compares vec with what
// the relay said before (in this run, or durably before a restart),
// reports a rollback, records vec as what the relay now holds, and stores
// it durably, lowering marks that went back.
func (c *Checker) RelayHolds(d keys.DeviceID, vec protocol.Vector) {
	var stored protocol.Vector
	if !c.Heard.Has(d) {
		acked, err := c.Store.Acked(d)
		if err != nil {
			c.Log.Warn("reading what a relay held before", "relay", d, "err", err)
		}
		stored = protocol.Vector(acked)
	}
	prev, ok := c.Heard.Set(d, vec)
	if !ok {
		prev = stored
	}

	var back []keys.DeviceID
	u := &vaultdb.Update{}
	changed := false
	for a, s := range prev {
		if vec[a] < s {
			back = append(back, a)
		}
	}
	for a, s := range vec {
		if prev[a] != s {
			u.SetAcked(d, a, s)
			changed = true
		}
	}
	for _, a := range back {
		if _, ok := vec[a]; !ok {
			u.SetAcked(d, a, 0)
			changed = true
		}
	}
	if changed {
		if err := c.Store.Commit(u); err != nil {
			c.Log.Warn("recording what a relay holds", "relay", d, "err", err)
		}
	}
	if len(back) > 0 {
		c.reportRollback(d, prev, vec, back)
	}
}

// reportRollback says that relay d went back from prev to vec on the
// authors in back.
func (c *Checker) reportRollback(d keys.DeviceID, prev, vec protocol.Vector, back []keys.DeviceID) {
	slices.SortFunc(back, func(a, b keys.DeviceID) int { return slices.Compare(a[:], b[:]) })
	a := back[0]
	rb := api.RelayRollback{
		Folder: c.Folder, Relay: d.String(), Author: a.String(),
		Had: prev[a], Now: vec[a], Authors: len(back), At: c.Now().UTC(),
	}
	rb.Message = fmt.Sprintf("relay %s reported an older state than before: it may be faulty or malicious "+
		"(it held %d entries of %s and now says %d, %d device(s) affected); "+
		"entries it no longer holds are not counted as safe there", d.Short(), rb.Had, a.Short(), rb.Now, rb.Authors)
	c.Log.Warn(rb.Message, "relay", d, "author", a, "had", rb.Had, "now", rb.Now, "authors", rb.Authors)
	if b, err := json.Marshal(rb); err == nil {
		u := &vaultdb.Update{}
		u.SetMeta(rollbackMetaKey(d), b)
		if err := c.Store.Commit(u); err != nil {
			c.Log.Warn("recording a relay rollback", "relay", d, "err", err)
		}
	}
	c.Publish(api.Event{Type: api.EventError, Folder: c.Folder, Peer: d.String(), Kind: KindRollback,
		Seq: rb.Now, Error: rb.Message})
}

// Rollbacks returns the last rollback recorded for each relay of the
// vault, oldest first. The record stays until the relay is removed from
// the vault, so a user can still see it after the relay caught up again.
func (c *Checker) Rollbacks() []api.RelayRollback {
	var out []api.RelayRollback
	for _, r := range c.Relays() {
		b, ok, err := c.Store.Meta(rollbackMetaKey(r))
		if err != nil || !ok {
			continue
		}
		var rb api.RelayRollback
		if json.Unmarshal(b, &rb) == nil {
			out = append(out, rb)
		}
	}
	slices.SortFunc(out, func(a, b api.RelayRollback) int { return a.At.Compare(b.At) })
	return out
}

// CheckWithheld compares peer d's LogStatus with what d sent on this
// stream: for each author whose log d claims past this device's head while
// a later entry of it is held back here (the one after the head never
// came), it reports the gap once.
func (c *Checker) CheckWithheld(d keys.DeviceID, vec protocol.Vector) {
	type gap struct {
		author     keys.DeviceID
		head, next uint64 // the gap is head+1 .. next-1
	}
	var gaps []gap
	for a, claimed := range vec {
		head := c.Store.Head(a).Seq
		if claimed <= head {
			continue
		}
		if next := c.FirstAhead(a, head+1, claimed); next != 0 {
			gaps = append(gaps, gap{a, head, next})
		}
	}
	for _, g := range gaps {
		key := "withheld/" + d.String() + "/" + g.author.String()
		mark := fmt.Appendf(nil, "%d", g.head)
		if b, ok, err := c.Store.Meta(key); err == nil && ok && string(b) == string(mark) {
			continue // reported already
		}
		u := &vaultdb.Update{}
		u.SetMeta(key, mark)
		if err := c.Store.Commit(u); err != nil {
			c.Log.Warn("recording a withheld entry", "peer", d, "err", err)
		}
		who := "peer"
		if c.IsRelay(d) {
			who = "relay"
		}
		msg := fmt.Sprintf("%s %s: %v: entries %d to %d of %s are missing from its log while it sent later ones; "+
			"the later entries are held back and nothing after the gap is applied until the missing ones arrive from anyone",
			who, d.Short(), ErrWithheld, g.head+1, g.next-1, g.author.Short())
		c.Log.Warn(msg, "peer", d, "author", g.author, "seq", g.head+1)
		c.Publish(api.Event{Type: api.EventError, Folder: c.Folder, Peer: d.String(), Kind: KindWithheld,
			Seq: g.head + 1, Error: msg})
	}
}
