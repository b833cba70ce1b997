package node

import (
	"github.com/libp2p/go-libp2p/core/peer"
	p2pprotocol "github.com/libp2p/go-libp2p/core/protocol"

	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/wire"
)

// Stream protocol IDs. Each is versioned by its path; an incompatible change
// gets a new path (docs/protocol/framing.md).
const (
	ProtoLog   p2pprotocol.ID = wire.ProtoLog
	ProtoChunk p2pprotocol.ID = wire.ProtoChunk
	ProtoPair  p2pprotocol.ID = wire.ProtoPair
	// ProtoRecover: a holder of the recovery phrase joins (recover.go).
	ProtoRecover p2pprotocol.ID = wire.ProtoRecover
)

// PeerIDOf returns the libp2p peer ID of a device.
func PeerIDOf(d keys.DeviceID) (peer.ID, error) { return p2p.PeerIDOf(d) }

// DeviceIDOf returns the device ID of a libp2p peer, or an error if its key
// is not an ed25519 key (then it cannot be a weft device).
func DeviceIDOf(p peer.ID) (keys.DeviceID, error) { return p2p.DeviceIDOf(p) }
