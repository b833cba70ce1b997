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
}

func (r Result) String() string {
	return fmt.Sprintf("%d streams (%d refused at open), %d frames written whole, %.1f MiB sent",
		r.Streams, r.Refused, r.Completed, float64(r.Bytes)/(1<<20))
}

// Run runs the attack until cfg.Duration passes or ctx ends, then closes
// its hosts. It fails only if no identity could connect to the target.
func Run(ctx context.Context, cfg Config) (Result, error) {
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
		return Result{}, errors.New("attack: no duration")
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	payload := make([]byte, cfg.FrameSize)
	var res counters
	var wg sync.WaitGroup
	var connected atomic.Int32
	var firstErr error
	var errOnce sync.Once
	for i := 0; i < cfg.Identities; i++ {
		h, err := newHost()
		if err != nil {
			return Result{}, err
		}
		defer h.Close()
		if err := h.Connect(ctx, cfg.Target); err != nil {
			errOnce.Do(func() { firstErr = err })
			continue
		}
		connected.Add(1)
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
					flood(ctx, h, cfg.Target.ID, proto, header, payload, cfg.StreamTimeout, &res)
				}()
			}
		}
	}
	wg.Wait()
	if connected.Load() == 0 {
		return res.result(), fmt.Errorf("attack: no identity reached the target: %w", firstErr)
	}
	return res.result(), nil
}

type counters struct{ streams, refused, bytes, completed atomic.Int64 }

func (c *counters) result() Result {
	return Result{Streams: c.streams.Load(), Refused: c.refused.Load(), Bytes: c.bytes.Load(), Completed: c.completed.Load()}
}

// flood opens streams of proto one after another until ctx ends, writing
// on each the frame header and payload, then resetting it.
func flood(ctx context.Context, h host.Host, target peer.ID, proto p2pprotocol.ID, header, payload []byte, timeout time.Duration, res *counters) {
	for ctx.Err() == nil {
		s, err := h.NewStream(ctx, target, proto)
		if err != nil {
			res.refused.Add(1)
			// The target's limits refused the stream; try again soon,
			// not in a busy loop.
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
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
