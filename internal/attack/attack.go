package attack

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	p2pprotocol "github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// Config describes one attack.
type Config struct {
	// Target is the agent attacked: its peer ID and addresses (loopback).
	Target peer.AddrInfo
	// Identities is the number of fresh identities; default 4.
	Identities int
	// Streams is the number of streams each identity keeps open at once
	// on each protocol; default 32.
	Streams int
	// Protocols attacked; default /weft/log/1, /weft/chunk/1 and
	// /weft/pair/1. Pairing streams carry a PairRequest, the others a
	// Hello: the first message each protocol expects.
	Protocols []p2pprotocol.ID
	// FrameSize is the payload of each first frame; default
	// wire.MaxFrameSize-1 (8 MiB).
	FrameSize int
	// Duration bounds the attack (required).
	Duration time.Duration
	// Rotate replaces an identity the target disconnects (or refuses)
	// with a fresh one, as an attacker who can make keys at will does;
	// without it the attack keeps its Identities throughout.
	Rotate bool
	// StreamTimeout bounds one stream's write (a target that stops
	// reading leaves it blocked on flow control); default 2 s.
	StreamTimeout time.Duration
}

// Result counts what the attack did.
type Result struct {
	Streams   int64 // streams opened and written to
	Refused   int64 // streams the target refused to open (its resource limits)
	Bytes     int64 // bytes written, frame headers and payloads
	Completed int64 // first frames written whole (the target read or buffered them)
	Fresh     int64 // identities made to replace ones the target dropped (Config.Rotate)
}

func (r Result) String() string {
	return fmt.Sprintf("%d streams (%d refused at open), %d frames written whole, %.1f MiB sent, %d fresh identities",
		r.Streams, r.Refused, r.Completed, float64(r.Bytes)/(1<<20), r.Fresh)
}

// Attack is an attack under way.
type Attack struct {
	res    counters
	done   chan struct{}
	cancel context.CancelFunc
}

// Start connects cfg.Identities fresh identities to the target and starts
// flooding; the attack runs until cfg.Duration passes, ctx ends or Stop.
// It fails if no identity could connect to the target.
func Start(ctx context.Context, cfg Config) (*Attack, error) {
	if cfg.Identities <= 0 {
		cfg.Identities = 4
	}
	if cfg.Streams <= 0 {
		cfg.Streams = 32
	}
	if len(cfg.Protocols) == 0 {
		cfg.Protocols = []p2pprotocol.ID{wire.ProtoLog, wire.ProtoChunk, wire.ProtoPair}
	}
	if cfg.FrameSize <= 0 {
		cfg.FrameSize = wire.MaxFrameSize - 1
	}
	if cfg.StreamTimeout <= 0 {
		cfg.StreamTimeout = 2 * time.Second
	}
	if cfg.Duration <= 0 {
		return nil, errors.New("attack: no duration")
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	a := &Attack{done: make(chan struct{}), cancel: cancel}
	var slots []*slot
	var firstErr error
	for i := 0; i < cfg.Identities; i++ {
		sl, err := newSlot(ctx, cfg.Target)
		if err != nil {
			firstErr = err
			continue
		}
		slots = append(slots, sl)
	}
	if len(slots) == 0 {
		cancel()
		return nil, fmt.Errorf("attack: no identity reached the target: %w", firstErr)
	}
	payload := make([]byte, cfg.FrameSize)
	var wg sync.WaitGroup
	for _, sl := range slots {
		if cfg.Rotate {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sl.rotate(ctx, cfg.Target, &a.res)
			}()
		}
		for _, proto := range cfg.Protocols {
			typ := wire.MsgHello
			if proto == wire.ProtoPair {
				typ = wire.MsgPairRequest
			}
			header := binary.AppendUvarint(nil, uint64(len(payload))+1)
			header = append(header, byte(typ))
			for j := 0; j < cfg.Streams; j++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					flood(ctx, sl, cfg.Target.ID, proto, header, payload, cfg.StreamTimeout, &a.res)
				}()
			}
		}
	}
	go func() {
		wg.Wait()
		for _, sl := range slots {
			(*sl.h.Load()).Close()
		}
		cancel()
		close(a.done)
	}()
	return a, nil
}

// slot is one attacking identity, replaced by a fresh one when the target
// disconnects it (Config.Rotate).
type slot struct {
	h atomic.Pointer[host.Host]
}

func newSlot(ctx context.Context, target peer.AddrInfo) (*slot, error) {
	h, err := connectedHost(ctx, target)
	if err != nil {
		return nil, err
	}
	sl := &slot{}
	sl.h.Store(&h)
	return sl, nil
}

// connectedHost is a fresh identity connected to target.
func connectedHost(ctx context.Context, target peer.AddrInfo) (host.Host, error) {
	h, err := newHost()
	if err != nil {
		return nil, err
	}
	if err := h.Connect(ctx, target); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// rotate replaces the slot's identity with a fresh, connected one each
// time the target drops it, until ctx ends.
func (sl *slot) rotate(ctx context.Context, target peer.AddrInfo, res *counters) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		old := *sl.h.Load()
		if old.Network().Connectedness(target.ID) == network.Connected {
			continue
		}
		h, err := connectedHost(ctx, target)
		if err != nil {
			continue
		}
		res.identities.Add(1)
		sl.h.Store(&h)
		old.Close()
	}
}

// Streams is the number of streams opened so far.
func (a *Attack) Streams() int64 { return a.res.streams.Load() }

// Stop ends the attack early; Wait still returns its result.
func (a *Attack) Stop() { a.cancel() }

// Wait waits for the attack to end and returns what it did.
func (a *Attack) Wait() Result {
	<-a.done
	return a.res.result()
}

// Run is Start then Wait.
func Run(ctx context.Context, cfg Config) (Result, error) {
	a, err := Start(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	return a.Wait(), nil
}

type counters struct{ streams, refused, bytes, completed, identities atomic.Int64 }

func (c *counters) result() Result {
	return Result{Streams: c.streams.Load(), Refused: c.refused.Load(), Bytes: c.bytes.Load(),
		Completed: c.completed.Load(), Fresh: c.identities.Load()}
}

// flood opens streams of proto one after another until ctx ends, writing
// on each the frame header and payload, then resetting it.
func flood(ctx context.Context, sl *slot, target peer.ID, proto p2pprotocol.ID, header, payload []byte, timeout time.Duration, res *counters) {
	for ctx.Err() == nil {
		h := *sl.h.Load()
		s, err := h.NewStream(ctx, target, proto)
		if err != nil {
			res.refused.Add(1)
			// The target's limits refused the stream; try again soon,
			// not in a busy loop.
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		res.streams.Add(1)
		_ = s.SetWriteDeadline(time.Now().Add(timeout))
		stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
		n, err := s.Write(header)
		res.bytes.Add(int64(n))
		if err == nil {
			n, err = s.Write(payload)
			res.bytes.Add(int64(n))
			if err == nil {
				res.completed.Add(1)
			}
		}
		stop()
		_ = s.Reset()
	}
}

// newHost is a fresh identity: an ed25519 key like a device's (so it is
// refused as a stranger, not as a non-device), on loopback TCP, with
// limits high enough for all its streams.
func newHost() (host.Host, error) {
	id, err := keys.GenerateIdentity(rand.Reader)
	if err != nil {
		return nil, err
	}
	many := rcmgr.BaseLimit{StreamsInbound: 1024, StreamsOutbound: 1024, Streams: 2048, Memory: 1 << 30}
	opts, err := p2p.Base{
		Identity:  id,
		Listen:    []string{"/ip4/127.0.0.1/tcp/0"},
		Protocols: []p2pprotocol.ID{wire.ProtoLog, wire.ProtoChunk, wire.ProtoPair},
		Total:     many, PerPeer: many,
		Peer: rcmgr.BaseLimit{ConnsInbound: 8, ConnsOutbound: 8, Conns: 8, FD: 8,
			StreamsInbound: 1024, StreamsOutbound: 1024, Streams: 2048, Memory: 1 << 30},
		ConnLow: 16, ConnHigh: 32,
	}.Options()
	if err != nil {
		return nil, err
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("attack host: %w", err)
	}
	return h, nil
}

// Target parses an agent's peer ID and multiaddrs (as `weft status` shows
// them) into an AddrInfo, keeping loopback addresses only.
func Target(device string, addrs []string) (peer.AddrInfo, error) {
	d, err := keys.ParseDeviceID(device)
	if err != nil {
		return peer.AddrInfo{}, err
	}
	id, err := p2p.PeerIDOf(d)
	if err != nil {
		return peer.AddrInfo{}, err
	}
	info := peer.AddrInfo{ID: id}
	for _, a := range addrs {
		m, err := ma.NewMultiaddr(a)
		if err != nil {
			continue
		}
		if v, err := m.ValueForProtocol(ma.P_IP4); err == nil && v == "127.0.0.1" {
			m, _ = ma.SplitLast(m)
			info.Addrs = append(info.Addrs, m)
		}
	}
	if len(info.Addrs) == 0 {
		return info, fmt.Errorf("attack: no loopback address in %v", addrs)
	}
	return info, nil
}
