package peerbook

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// MetaKey is the metadata key under which a vault remembers where its
// members were last reachable.
const MetaKey = "known-peers"

// Store is where a Book keeps its list durably: a vault's metadata.
type Store interface {
	// Meta returns the value stored under key, if any.
	Meta(key string) ([]byte, bool, error)
	// SetMeta stores raw under key durably.
	SetMeta(key string, raw []byte) error
}

// Book remembers where a vault's members were last reachable, durably
// (metadata MetaKey): the dial loop dials them there, doctor shows
// them, and peer exchange tells other members. It has its own lock and
// calls nothing of the vault's while holding it.
//
// The list is decoded from the database once and then kept in memory:
// the dial loop (connect.DialLoop) reads it every second, and decoding it each time (JSON and a
// base58 device ID per member) was, with a few hundred members, most of
// an idle node's CPU (a quarter of all CPU in a 300-device simulation).
type Book struct {
	store Store

	mu     sync.Mutex // guards the fields below; serialises read-modify-write of the list
	loaded bool
	known  map[keys.DeviceID][]string // address slices clipped: append is safe
}

// New returns the book kept in store.
func New(store Store) *Book { return &Book{store: store} }

// All returns the remembered addresses of the vault's members, or nil. The
// map is the caller's; the address slices are shared and must not be
// written in place (append is safe: they are clipped).
func (b *Book) All() map[keys.DeviceID][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.loadLocked())
}

// loadLocked returns the decoded list, reading it from the database the
// first time. b.mu must be held.
func (b *Book) loadLocked() map[keys.DeviceID][]string {
	if !b.loaded {
		b.cacheLocked(b.read())
		b.loaded = true
	}
	return b.known
}

// cacheLocked keeps known (clipped) as the decoded list. b.mu must be held.
func (b *Book) cacheLocked(known map[keys.DeviceID][]string) {
	b.known = nil
	if known != nil {
		b.known = make(map[keys.DeviceID][]string, len(known))
		for d, a := range known {
			b.known[d] = slices.Clip(slices.Clone(a))
		}
	}
}

// read decodes the remembered addresses from the database; a missing or
// undecodable record is an empty list (it is only a hint for dialling).
func (b *Book) read() map[keys.DeviceID][]string {
	raw, ok, err := b.store.Meta(MetaKey)
	if err != nil || !ok {
		return nil
	}
	var m map[string][]string
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	out := make(map[keys.DeviceID][]string, len(m))
	for s, addrs := range m {
		d, err := keys.ParseDeviceID(s)
		if err == nil {
			out[d] = addrs
		}
	}
	return out
}

// Set remembers addrs for d (replacing what was there), durably.
func (b *Book) Set(d keys.DeviceID, addrs []string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := maps.Clone(b.loadLocked())
	if slices.Equal(cur[d], addrs) {
		return nil
	}
	if cur == nil {
		cur = map[keys.DeviceID][]string{}
	}
	cur[d] = addrs
	return b.storeLocked(cur)
}

// Learn remembers, from a peer exchange, the addresses of members this
// device knows no address for yet, in one durable commit. self and
// devices that are not members (isMember, asked before the book's lock is
// taken) are skipped. A member of a vault with hundreds of devices is sent
// hundreds of addresses at the start of every log stream, before any
// entry; one commit (one fsync) and one re-encoding of the whole list per
// address held those entries back: in the simulation, S2 with 200 devices
// built by pairing delivered the edit to its first device only after about
// 10 s, against 1 s when the devices had no addresses to exchange.
func (b *Book) Learn(ps wire.Peers, self keys.DeviceID, isMember func(keys.DeviceID) bool) error {
	var offered []wire.PeerAddrs
	for _, p := range ps.Peers {
		if p.Device != self && len(p.Addrs) > 0 && isMember(p.Device) {
			offered = append(offered, p)
		}
	}
	if len(offered) == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := maps.Clone(b.loadLocked())
	if cur == nil {
		cur = map[keys.DeviceID][]string{}
	}
	added := 0
	for _, p := range offered {
		if _, known := cur[p.Device]; known {
			continue
		}
		cur[p.Device] = p.Addrs
		added++
	}
	if added == 0 {
		return nil
	}
	return b.storeLocked(cur)
}

// storeLocked replaces the remembered addresses with known, durably, and
// then in memory. b.mu must be held, so that read-modify-write cycles of
// the list do not lose each other's additions.
func (b *Book) storeLocked(known map[keys.DeviceID][]string) error {
	m := make(map[string][]string, len(known))
	for k, a := range known {
		m[k.String()] = a
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding known peers: %w", err)
	}
	if err := b.store.SetMeta(MetaKey, raw); err != nil {
		return err
	}
	b.cacheLocked(known)
	b.loaded = true
	return nil
}

// Exchange lists where members (sorted by device) other than self and to
// are, from what this device remembers, for peer exchange with to.
func (b *Book) Exchange(members []keys.DeviceID, self, to keys.DeviceID) wire.Peers {
	var out wire.Peers
	known := b.All()
	for _, d := range members {
		if d == to || d == self || len(known[d]) == 0 {
			continue
		}
		out.Peers = append(out.Peers, wire.PeerAddrs{Device: d, Addrs: known[d]})
	}
	return out
}
