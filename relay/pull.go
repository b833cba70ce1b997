package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/weftsync/weft/internal/netsync"
	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/internal/pullset"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// onConnected starts pulling from a device of a served vault and retries
// chunks no device had: the newcomer may hold them. It also wakes the log
// streams of the vault so members learn of the newcomer's addresses.
func (r *Relay) onConnected(p peer.ID) {
	dev, err := DeviceIDOf(p)
	if err != nil {
		return
	}
	r.stats.devicesChanged(r)
	if len(r.vaultsOf(dev)) > 0 {
		p2p.Admit(r.host, p, peerLimits) // a member: off strangerLimits (strangers.go)
	}
	for _, rep := range r.vaultsListingRelay(p) {
		p2p.Admit(r.host, p, peerLimits)
		r.fromPeerRelay(rep, p, true, true) // a new connection: it may hold what nobody had
	}
	for _, rep := range r.vaultsOf(dev) {
		r.startPull(rep, p, dev, true)
		rep.retryUnavailable()
		rep.mu.Lock()
		rep.grewLocked()
		rep.mu.Unlock()
	}
}

// startPull keeps a log stream open to device p of rep's vault while it
// stays connected, one puller per (vault, device) (internal/pullset) on a
// goroutine Run waits for; a puller already running is woken (a new
// connection or enrollment: it tries again at once, and one giving up
// runs again) when wake is set. It reports whether it started one.
func (r *Relay) startPull(rep *replica, p peer.ID, dev keys.DeviceID, wake bool) bool {
	spawn := func(f func(context.Context)) bool {
		r.mu.Lock()
		ctx := rep.ctx // the replica's: a drop ends the pull
		ok := ctx != nil && r.vaults[rep.id] == rep
		r.mu.Unlock()
		return ok && r.goRun(func(context.Context) { f(ctx) })
	}
	run := func(ctx context.Context, kick <-chan struct{}) {
		backoff := pullset.FirstBackoff
		for ctx.Err() == nil && r.host.Network().Connectedness(p) == network.Connected && r.isSource(rep, p, dev) {
			err := r.pullLog(ctx, rep, p, dev)
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, ErrQuota) {
				backoff = time.Minute
			}
			r.log.Debug("log stream from device ended", "vault", rep.id, "device", dev, "err", err)
			if !pullset.Wait(ctx, kick, &backoff, 30*time.Second) {
				return
			}
		}
	}
	key := pullKey{rep.id, p}
	if wake {
		return r.pullers.Start(key, spawn, run)
	}
	return r.pullers.Ensure(key, spawn, run)
}

// pullLog opens a log stream to a device and stores what it sends until
// the stream ends: membership records, then entries, each verified.
func (r *Relay) pullLog(ctx context.Context, rep *replica, p peer.ID, dev keys.DeviceID) error {
	s, err := r.host.NewStream(ctx, p, ProtoLog)
	if err != nil {
		return fmt.Errorf("opening log stream: %w", err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	c := wire.NewConn(r.limitVault(s, rep.id), r.stats)
	if err := c.OpenHello(rep.id); err != nil {
		return err
	}
	// The stored heads, not cut at revocations (replica.offered says why).
	mine := map[keys.DeviceID]uint64{}
	for a, h := range rep.db.Heads() {
		mine[a] = h.Seq
	}
	// The membership sequence spares the device resending every record
	// the replica holds on each pull (wire.LogRequest.MemberSeq), as a
	// device's request does (node/logproto.go).
	req := wire.LogRequest{Vector: wire.VectorOf(mine), MemberSeq: rep.memberSeq()}
	return netsync.PullLog(c, req, &replicaPull{r: r, rep: rep, c: c, dev: dev, relay: r.isPeerRelay(rep, p)})
}

// replicaPull stores what a device's log stream brings into a replica
// (netsync.LogSink): membership records, then entries, each verified.
type replicaPull struct {
	r   *Relay
	rep *replica
	c   *wire.Conn
	dev keys.DeviceID
	// relay: the stream is from another relay of the vault
	// (peerrelays.go), which speaks as a relay: its status and holds
	// are for devices, and are ignored here.
	relay bool
}

func (p *replicaPull) Member(payload []byte) error {
	rec, err := member.Decode(payload)
	if err == nil {
		err = p.rep.addMember(rec)
	}
	if err != nil {
		return fmt.Errorf("membership record from %s: %w", p.dev, err)
	}
	return nil
}

func (p *replicaPull) Entry(payload []byte) error {
	if err := p.rep.ingestEntryFrom(payload, p.dev); err != nil {
		if errors.Is(err, ErrQuota) {
			p.r.log.Warn("vault quota reached; taking no more entries", "vault", p.rep.id)
		}
		if dec, derr := entry.Decode(payload); derr == nil && dec.Author() == p.dev && errors.Is(err, entry.ErrPrevMismatch) {
			// The device's own log forked from the copy here (often the
			// only other copy): tell it, as devices do
			// (node/entryrefusals.go); it checks the claim.
			p.c.SendError(wire.CodeLogForked, fmt.Sprintf("entry %d of your own log does not follow the entry %d of it held here: your log has forked", dec.Seq(), dec.Seq()-1))
		}
		return fmt.Errorf("entry from %s: %w", p.dev, err)
	}
	p.r.stats.entriesStored.Inc()
	return nil
}

// Status passes what the device holds on to the other devices (holds.go).
func (p *replicaPull) Status(st wire.LogStatus) error {
	if !p.relay {
		p.rep.noteHolds(p.dev, st.Vector)
	}
	return nil
}

// Peers: a device's peers tell a relay nothing it needs.
func (p *replicaPull) Peers(wire.Peers) error { return nil }

// RelayStatus and Holds come from relays only; a device sends neither.
func (p *replicaPull) RelayStatus(wire.RelayStatus) error {
	if p.relay {
		return nil
	}
	return fmt.Errorf("%w on log stream: relay status from device %s", wire.ErrUnexpected, p.dev)
}

func (p *replicaPull) Holds(wire.Holds) error {
	if p.relay {
		return nil
	}
	return fmt.Errorf("%w on log stream: holds from device %s", wire.ErrUnexpected, p.dev)
}

// fetchRound is the number of chunks one round asks for; chunkIdle how
// long a chunk stream may go without an answer.
const (
	fetchRound = 512
	chunkIdle  = 30 * time.Second
)

// fetchLoop fetches the chunks rep's stored entries reference and the
// relay lacks, from the vault's connected devices, until ctx ends.
func (r *Relay) fetchLoop(ctx context.Context, rep *replica) {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-rep.fetchKick:
		case <-tick.C:
		}
		for ctx.Err() == nil {
			want := rep.wantList(fetchRound)
			if len(want) == 0 {
				break
			}
			missing := want
			for _, p := range r.connectedSources(rep) {
				if len(missing) == 0 {
					break
				}
				left, err := r.fetchFrom(ctx, rep, p, missing)
				if err != nil {
					r.log.Debug("fetching chunks", "vault", rep.id, "peer", p, "err", err)
					if errors.Is(err, ErrQuota) {
						break
					}
				}
				missing = left
			}
			for _, c := range missing {
				rep.missedChunk(c)
			}
			rep.settle()
			// A round nobody could serve marked its chunks unavailable, so
			// the next takes the ones behind them; when every wanted
			// chunk has been tried, wantList is empty and the loop waits
			// for a device, an entry or the tick.
		}
	}
}

// connectedSources lists rep's members and the vault's other relays
// (peerrelays.go) the relay is connected to: where its chunks can come
// from, members first.
func (r *Relay) connectedSources(rep *replica) []peer.ID {
	var out []peer.ID
	for _, d := range rep.members() {
		p, err := PeerIDOf(d)
		if err == nil && r.host.Network().Connectedness(p) == network.Connected {
			out = append(out, p)
		}
	}
	for _, info := range r.peerRelays(rep) {
		if r.host.Network().Connectedness(info.ID) == network.Connected {
			out = append(out, info.ID)
		}
	}
	return out
}

// putParallel bounds the chunks of one fetch being stored at once. The
// chunk store commits concurrent puts in groups sharing one fsync, so
// storing while the next chunks are read keeps the store from syncing
// once per chunk; the bound keeps memory at a few MiB.
const putParallel = 32

// fetchFrom asks device p for want and stores what it sends. It returns
// the CIDs p did not deliver (or that could not be stored).
func (r *Relay) fetchFrom(ctx context.Context, rep *replica, p peer.ID, want []cid.Cid) (missing []cid.Cid, err error) {
	s, err := r.host.NewStream(ctx, p, ProtoChunk)
	if err != nil {
		return want, fmt.Errorf("opening chunk stream: %w", err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	_ = s.SetDeadline(time.Now().Add(helloTimeout))
	c := wire.NewConn(r.limitVault(s, rep.id), r.stats)
	if err := c.OpenHello(rep.id); err != nil {
		return want, err
	}
	_ = s.SetDeadline(time.Time{}) // the session sets its own read deadlines

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // guards lost and quotaErr
		lost     []cid.Cid
		quotaErr error
		slots    = make(chan struct{}, putParallel)
	)
	miss := func(ids ...cid.Cid) {
		mu.Lock()
		lost = append(lost, ids...)
		mu.Unlock()
	}
	// Each chunk is stored on a goroutine of its own (at most putParallel
	// at once) while the next is read; every return waits for the puts in
	// flight and then reports what was lost.
	notSent, err := netsync.FetchChunks(s, c, want, chunkIdle, func(id cid.Cid, env []byte) error {
		mu.Lock()
		full := quotaErr
		mu.Unlock()
		if full != nil {
			return full
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			err := rep.putChunk(id, env)
			switch {
			case err == nil:
				r.stats.chunksStored.Inc()
			case errors.Is(err, ErrQuota):
				mu.Lock()
				quotaErr = err
				lost = append(lost, id)
				mu.Unlock()
			default:
				// A chunk that does not hash to its CID is not kept;
				// another device may have a good copy (pack.Put checks).
				r.log.Warn("chunk refused", "vault", rep.id, "peer", p, "cid", id, "err", err)
				miss(id)
			}
		})
		return nil
	})
	wg.Wait()
	miss(notSent...)
	if quotaErr != nil {
		// The quota ended the fetch (the error got returned), or filled
		// while the last chunks were stored: either way it is the cause.
		err = quotaErr
	}
	return lost, err
}

// peersFor lists the vault's members connected to the relay other than
// dev, with the addresses the relay sees them at and a circuit address
// through the relay, so dev can dial them directly or through the relay
// (and then try a hole punch).
func (r *Relay) peersFor(rep *replica, dev keys.DeviceID) wire.Peers {
	var out wire.Peers
	members := rep.members()
	slices.SortFunc(members, func(a, b keys.DeviceID) int { return compareIDs(a, b) })
	for _, d := range members {
		if d == dev {
			continue
		}
		p, err := PeerIDOf(d)
		if err != nil || r.host.Network().Connectedness(p) != network.Connected {
			continue
		}
		var addrs []string
		for _, c := range r.host.Network().ConnsToPeer(p) {
			if c.Stat().Limited {
				continue
			}
			addrs = append(addrs, c.RemoteMultiaddr().String())
		}
		for _, a := range r.host.Addrs() {
			addrs = append(addrs, a.Encapsulate(ma.StringCast("/p2p/"+r.host.ID().String()+"/p2p-circuit")).String())
		}
		slices.Sort(addrs)
		addrs = slices.Compact(addrs)
		if len(addrs) > wire.MaxPeerAddrs {
			addrs = addrs[:wire.MaxPeerAddrs]
		}
		out.Peers = append(out.Peers, wire.PeerAddrs{Device: d, Addrs: addrs})
	}
	return out
}

func compareIDs(a, b keys.DeviceID) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}
