package relay

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/weftsync/weft/internal/netsync"
	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/internal/refusal"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
	"github.com/weftsync/weft/store/vaultdb"
)

// helloTimeout bounds how long an opener may take to say what it wants.
const helloTimeout = 10 * time.Second

// peersRefresh is how often a log stream re-sends the list of connected
// members when nothing else happens (a device that connected or left).
const peersRefresh = 10 * time.Second

// handleEnroll answers /weft/relay/1: a member asks the relay to serve its
// vault, or brings newer membership records.
func (r *Relay) handleEnroll(s network.Stream) {
	defer s.Close()
	dev, err := DeviceIDOf(s.Conn().RemotePeer())
	if err != nil {
		r.refuseRead(s, s.Conn().RemotePeer(), fmt.Errorf("%w: %w", refusal.ErrNotDevice, err))
		return
	}
	c := r.inboundConn(s)
	_ = s.SetReadDeadline(time.Now().Add(helloTimeout))
	p, err := c.ExpectLimit(wire.MsgEnroll, wire.MaxEnrollFrame)
	if err != nil {
		r.refuseRead(s, dev, err)
		return
	}
	en, err := wire.ParseEnroll(p)
	if err != nil {
		c.SendError(wire.CodeProtocol, err.Error())
		r.refuse(s, refusal.Malformed, dev, err)
		return
	}
	recs, err := checkMembership(en)
	if err != nil {
		c.SendError(wire.CodeProtocol, err.Error())
		r.refuse(s, refusal.Malformed, dev, err)
		return
	}
	c.Release() // recs hold what is needed of the frame
	st := member.NewState(en.Vault)
	for _, rec := range recs {
		_ = st.Apply(rec) // checked above
	}
	// Whoever sent them holds records signed with the vault's key, so
	// it may learn whether this relay is listed.
	if !Listed(st.Relays(), r.host.ID()) {
		c.SendError(wire.CodeNotMember, "this relay is not listed in the vault's membership; add it with `weft relay add`")
		r.refuse(s, refusal.NotMember, dev, errNotListed)
		return
	}
	if !st.IsMember(dev) {
		c.SendError(wire.CodeNotMember, wire.ReasonNotMember)
		r.refuse(s, refusal.NotMember, dev, errNotMember)
		return
	}
	rep, err := r.enroll(en.Vault, recs)
	if err != nil {
		code := wire.CodeInternal
		switch {
		case errors.Is(err, errNotAllowed):
			code = wire.CodeUnknownVault
		case errors.Is(err, errTooManyVaults):
			code = wire.CodeQuotaExceeded
		case errors.Is(err, vaultdb.ErrFork), errors.Is(err, member.ErrSequence), errors.Is(err, member.ErrPrevMismatch):
			code = wire.CodeProtocol
		}
		r.log.Info("enrollment refused", "vault", en.Vault, "device", dev, "err", err)
		c.SendError(code, err.Error())
		return
	}
	// The log sent may be an old prefix: judge the device and the listing
	// by the whole log the replica now holds (a device revoked later, or
	// a vault that has since removed this relay, is refused).
	if !Listed(rep.relays(), r.host.ID()) {
		c.SendError(wire.CodeNotMember, "this relay is no longer listed in the vault's membership")
		return
	}
	if !rep.isMember(dev) {
		c.SendError(wire.CodeNotMember, wire.ReasonNotMember)
		r.refuse(s, refusal.NotMember, dev, errNotMember)
		return
	}
	if err := c.Send(wire.MsgRelayStatus, rep.status()); err != nil {
		return
	}
	_ = c.Flush()
	p2p.Admit(r.host, s.Conn().RemotePeer(), peerLimits)
	r.log.Info("device enrolled", "vault", en.Vault, "device", dev)
	r.startPull(rep, s.Conn().RemotePeer(), dev, true)
}

// checkMembership decodes an Enroll's records and checks that they form a
// valid membership log of its vault. Its genesis must prove the vault ID
// (member.ErrVaultKey, member.ErrVaultSignature): its vault key hashes to
// the ID and signs it, which only a holder of the vault's root secret can
// do. So someone who merely knows the ID cannot enroll a log of its own
// before the vault's devices do and lock them out as a fork.
func checkMembership(en wire.Enroll) ([]member.Record, error) {
	if len(en.Records) == 0 {
		return nil, errors.New("enroll without membership records")
	}
	st := member.NewState(en.Vault)
	recs := make([]member.Record, 0, len(en.Records))
	for i, raw := range en.Records {
		rec, err := member.Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("membership record %d: %w", i+1, err)
		}
		if err := st.Apply(rec); err != nil {
			return nil, fmt.Errorf("membership record %d: %w", i+1, err)
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

var (
	errNotListed     = errors.New("this relay is not listed in the vault's membership")
	errNotAllowed    = errors.New("this relay does not serve that vault (operator allow-list)")
	errTooManyVaults = errors.New("this relay serves as many vaults as its operator allows")
)

// enroll returns the replica of vault id, creating it on first enrollment,
// with recs added to its membership log.
func (r *Relay) enroll(id keys.VaultID, recs []member.Record) (*replica, error) {
	r.mu.Lock()
	rep := r.vaults[id]
	if rep == nil {
		if r.closed {
			r.mu.Unlock()
			return nil, errors.New("relay shutting down")
		}
		if len(r.cfg.Allow) > 0 && !containsVault(r.cfg.Allow, id) {
			r.mu.Unlock()
			return nil, errNotAllowed
		}
		if r.dropped[id] {
			r.mu.Unlock()
			return nil, errDropped
		}
		if len(r.vaults) >= r.cfg.MaxVaults {
			r.mu.Unlock()
			return nil, errTooManyVaults
		}
		var err error
		rep, err = openReplica(r.cfg.Home, id, r.cfg.Quota, r.cfg.Chunks, r.log, r.stats)
		if err != nil {
			r.mu.Unlock()
			return nil, err
		}
		r.vaults[id] = rep
		r.startFetchLocked(rep)
	}
	r.mu.Unlock()
	for _, rec := range recs {
		if err := rep.addMember(rec); err != nil {
			return nil, fmt.Errorf("membership record %d: %w", rec.Seq, err)
		}
	}
	return rep, nil
}

func containsVault(ids []keys.VaultID, id keys.VaultID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// acceptHello answers a stream's Hello when the relay serves the vault
// and the opener is one of its current members. A vault not served and
// an opener that is not a member get the same answer (wire.ReasonNotMember):
// a member whose vault the relay does not serve (yet, or any more) then
// enrolls (node/relays.go), and an outsider learns nothing of which
// vaults the relay serves. The error returned, for the log, says which.
func (r *Relay) acceptHello(c *wire.Conn, dev keys.DeviceID) (*replica, error) {
	h, err := c.ReadHello()
	if err != nil {
		return nil, err
	}
	rep := r.replica(h.Vault)
	if rep == nil || !Listed(rep.relays(), r.host.ID()) {
		c.SendError(wire.CodeNotMember, wire.ReasonNotMember)
		return nil, fmt.Errorf("%w: vault %s not served", errNotMember, h.Vault)
	}
	if p, err := PeerIDOf(dev); err != nil || !r.isSource(rep, p, dev) {
		c.SendError(wire.CodeNotMember, wire.ReasonNotMember)
		return nil, fmt.Errorf("%s: %w", dev, errNotMember)
	}
	return rep, c.AcceptHello(h.Vault)
}

// openStream runs the answerer's Hello step of a device's stream: it names
// the device, checks the vault is served and the device a member, and
// answers. ok is false when the stream is to be dropped (already answered
// with an Error, or reset when the peer is not a weft device).
func (r *Relay) openStream(s network.Stream) (dev keys.DeviceID, c *wire.Conn, rep *replica, ok bool) {
	dev, err := DeviceIDOf(s.Conn().RemotePeer())
	if err != nil {
		r.refuseRead(s, s.Conn().RemotePeer(), fmt.Errorf("%w: %w", refusal.ErrNotDevice, err))
		return dev, nil, nil, false
	}
	rw := r.limit(s)
	c = r.inboundConnOver(s, rw)
	_ = s.SetReadDeadline(time.Now().Add(helloTimeout))
	rep, err = r.acceptHello(c, dev)
	if errors.Is(err, errNotMember) {
		r.refuse(s, refusal.NotMember, dev, err)
		return dev, nil, nil, false
	}
	if err != nil {
		r.refuseRead(s, dev, err)
		return dev, nil, nil, false
	}
	c.SetMemory(s.Scope(), network.ReservationPriorityHigh) // a member now
	r.setVault(rw, rep.id)
	rep.touch() // a member's stream: activity
	p2p.Admit(r.host, s.Conn().RemotePeer(), peerLimits)
	_ = s.SetReadDeadline(time.Time{})
	return dev, c, rep, true
}

// handleLog answers a device's log stream: the vault's membership, the
// entries it lacks, the relay's status and held vector, then every new
// entry as it arrives, for as long as the stream lasts.
func (r *Relay) handleLog(s network.Stream) {
	defer s.Close()
	dev, c, rep, ok := r.openStream(s)
	if !ok {
		return
	}
	_ = s.SetReadDeadline(time.Now().Add(helloTimeout))
	p, err := c.ExpectLimit(wire.MsgLogRequest, wire.MaxLogRequestFrame)
	if err != nil {
		return
	}
	_ = s.SetReadDeadline(time.Time{})
	req, err := wire.ParseLogRequest(p)
	if err != nil {
		c.SendError(wire.CodeProtocol, err.Error())
		return
	}
	ctx := r.replicaCtx(rep) // the replica's: a drop ends the stream
	if ctx == nil {
		return
	}
	// The opener only reads; a reader on our side notices when it goes.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = s.Read(make([]byte, 1))
		cancel()
	}()
	if err := r.serveLog(ctx, c, rep, dev, req); err != nil && !errors.Is(err, context.Canceled) {
		r.log.Debug("serving log", "device", dev, "err", err)
	}
}

// serveLog streams to the opener what it lacks, then pushes growth until
// the stream or ctx ends: internal/netsync's log session, as a device
// runs it, with the relay's own frames at each round (the members it can
// reach, what the other members hold, its quota) and its held vector sent
// whole, so that a relay going back on what it held shows
// (node/rollback.go). req is the opener's LogRequest: the membership
// records up to its MemberSeq are not sent; an opener that claims more
// records than the replica holds gets only those past its claim, once the
// replica has them.
func (r *Relay) serveLog(ctx context.Context, c *wire.Conn, rep *replica, dev keys.DeviceID, req wire.LogRequest) error {
	var lastStatus wire.RelayStatus
	var lastPeers string
	var holdsSent uint64 // generation of the last Holds sent; 0: none yet
	ls := netsync.LogServer{
		Source: replicaLog{rep},
		// What the opener wrote itself and sent the replica since its
		// request, it holds, as on a device (netsync.LogServer.FromOpener).
		Opener: dev, FromOpener: func() uint64 { return rep.fromAuthorSeq(dev) },
		Round: func(c *wire.Conn, _ protocol.Vector) error {
			peers := r.peersFor(rep, dev)
			if key := fmt.Sprint(peers); key != lastPeers {
				if err := c.Send(wire.MsgPeers, peers); err != nil {
					return err
				}
				lastPeers = key
			}
			if hs, gen := rep.holdsFor(dev, holdsSent); gen != holdsSent {
				for _, h := range hs {
					if err := c.Send(wire.MsgHolds, h); err != nil {
						return err
					}
				}
				holdsSent = gen
			}
			if st := rep.status(); st != lastStatus {
				if err := c.Send(wire.MsgRelayStatus, st); err != nil {
					return err
				}
				lastStatus = st
			}
			return nil
		},
		WholeStatus: true,
		Refresh:     peersRefresh,
		Allowed:     func() bool { return r.isSource(rep, peerOf(dev), dev) },
		Sent:        func(n int) { r.stats.entriesServed.Add(float64(n)) },
	}
	return ls.Serve(ctx, c, req)
}

// replicaLog is a replica's log as the log session serves it: every
// stored entry (replica.offered says why a revoked author's is cut), and
// as held those whose chunks the relay holds (replica.heldVector).
type replicaLog struct{ rep *replica }

func (l replicaLog) Grown() <-chan struct{}   { return l.rep.growthSignal() }
func (l replicaLog) Records() []member.Record { return l.rep.records() }
func (l replicaLog) Offered() protocol.Vector { return l.rep.offered() }
func (l replicaLog) Held() protocol.Vector    { return protocol.Vector(l.rep.heldVector()) }
func (l replicaLog) Range(author keys.DeviceID, from, to uint64, fn func(*entry.Entry) error) error {
	return l.rep.db.Range(author, from, to, fn)
}

// handleChunk serves chunks from the replica's store (internal/netsync's
// chunk session, as a device runs it), reading them on every core. A
// chunk that fails its CID check on read is reported missing, never sent;
// the store quarantines it and the replica wants it again (scrub.go).
func (r *Relay) handleChunk(s network.Stream) {
	defer s.Close()
	dev, c, rep, ok := r.openStream(s)
	if !ok {
		return
	}
	cs := netsync.ChunkServer{
		Make: func(dst []byte, id cid.Cid, scratch []byte) ([]byte, []byte, error) {
			env, err := rep.chunks.Get(id)
			if err != nil {
				return dst, scratch, err
			}
			return append(dst, env...), scratch, nil
		},
		Workers: runtime.GOMAXPROCS(0),
		Served:  r.stats.chunksServed.Inc,
	}
	cs.Serve(c, func() bool { return r.isSource(rep, peerOf(dev), dev) })
}
