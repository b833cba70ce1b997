package wire

import "fmt"

// MsgType is the one-byte type code that follows a frame's length.
//
// Codes are grouped by stream family in ranges of 16 so related messages sit
// together and each family has room to grow. A code, once published, is never
// reused for a different message, even after the message is retired: retire
// it by leaving it in the table commented "retired". 0x00 is reserved and is
// never sent, so a zeroed buffer cannot pass for a message.
//
// Every frame is laid out as
//
//	uvarint(1 + len(payload)) | type (1 byte) | payload
//
// and the comments below give each message's payload. A payload marked
// "layout in msg_x.go" is defined there, next to its AppendBinary / parse
// functions, and summarised in docs/protocol/framing.md.
type MsgType byte

const (
	// msgReserved (0x00) is never sent.
	msgReserved MsgType = 0x00

	// 0x01..0x0f: every stream.

	// MsgHello opens every stream, from each side: protocol version, vault
	// ID, device ID. Payload: layout in msg_hello.go.
	MsgHello MsgType = 0x01
	// MsgError reports why the sender is giving up on the stream (an error
	// code and a human-readable reason); nothing follows it. Payload:
	// layout in msg_hello.go.
	MsgError MsgType = 0x02

	// 0x10..0x1f: /weft/log/1.

	// MsgLogRequest carries the sender's version vector (author device ID ->
	// highest sequence number held); the answer is every entry it lacks.
	// Payload: layout in msg_log.go.
	MsgLogRequest MsgType = 0x10
	// MsgEntry carries one signed log entry in its canonical encoding
	// (protocol/entry), unchanged: the payload is exactly the bytes whose
	// hash is the entry's CID.
	MsgEntry MsgType = 0x11
	// MsgLogStatus carries the answerer's version vector: after catch-up,
	// and whenever it grows. Payload: as LogRequest, layout in msg_log.go.
	MsgLogStatus MsgType = 0x12

	// 0x20..0x2f: /weft/chunk/1.

	// MsgWantChunks is a batch of chunk CIDs the sender wants. Payload:
	// layout in msg_chunk.go.
	MsgWantChunks MsgType = 0x20
	// MsgChunk answers one wanted CID with the chunk's encrypted envelope
	// (protocol/chunk); the receiver checks the CID before keeping it.
	// Payload: layout in msg_chunk.go.
	MsgChunk MsgType = 0x21
	// MsgChunkMissing answers one wanted CID the sender does not hold.
	// Payload: layout in msg_chunk.go.
	MsgChunkMissing MsgType = 0x22

	// 0x30..0x3f: /weft/pair/1 and membership.

	// MsgPairRequest carries the joiner's invite proof. Layout in msg_pair.go.
	MsgPairRequest MsgType = 0x30
	// MsgPairAccept carries the wrapped vault keys and the membership
	// records. Layout in msg_pair.go.
	MsgPairAccept MsgType = 0x31
	// MsgMember carries one encoded membership record
	// (protocol/member.Record) on /weft/log/1, before entries.
	MsgMember MsgType = 0x32
	// MsgRecoverProof opens /weft/recover/1 after the Hello: the vault
	// key's proof. Layout in msg_recover.go.
	MsgRecoverProof MsgType = 0x33
	// MsgMemberLog carries a vault's whole membership log on
	// /weft/recover/1. Layout in msg_recover.go.
	MsgMemberLog MsgType = 0x34
	// MsgPairPending tells a joiner on /weft/pair/1 that its join waits
	// for a person's approval on the inviting device (`weft invite
	// --confirm`); a PairAccept or an Error follows. Empty payload.
	MsgPairPending MsgType = 0x35

	// 0x40..0x4f: peer exchange.

	// MsgPeers tells a log stream's opener where the vault's other members
	// listen. Layout in msg_peers.go.
	MsgPeers MsgType = 0x40

	// 0x50..0x5f: /weft/relay/1 and relay store-and-forward.

	// MsgEnroll asks a relay to serve a vault, carrying its membership
	// log. Layout in msg_relay.go.
	MsgEnroll MsgType = 0x50
	// MsgRelayStatus is a relay's account of a vault's quota, in answer
	// to Enroll and on log streams a device opens to a relay. Layout in
	// msg_relay.go.
	MsgRelayStatus MsgType = 0x51
	// MsgHolds is a relay's account, on a log stream a device opened to
	// it, of what the vault's other member devices hold. Layout in
	// msg_holds.go. Since ProtocolVersion 3.
	MsgHolds MsgType = 0x52

	// 0x60..0x6f: /weft/clock/1.

	// MsgClockProbe asks for the answerer's clock. Layout in msg_clock.go.
	MsgClockProbe MsgType = 0x60
	// MsgClockReply answers a ClockProbe with the answerer's receive and
	// send times. Layout in msg_clock.go.
	MsgClockReply MsgType = 0x61

	// 0xf0..0xff: experiments; never in a released protocol.
)

var msgNames = map[MsgType]string{
	MsgHello:        "Hello",
	MsgError:        "Error",
	MsgLogRequest:   "LogRequest",
	MsgEntry:        "Entry",
	MsgLogStatus:    "LogStatus",
	MsgPairRequest:  "PairRequest",
	MsgPairAccept:   "PairAccept",
	MsgMember:       "Member",
	MsgRecoverProof: "RecoverProof",
	MsgMemberLog:    "MemberLog",
	MsgPairPending:  "PairPending",
	MsgPeers:        "Peers",
	MsgWantChunks:   "WantChunks",
	MsgChunk:        "Chunk",
	MsgChunkMissing: "ChunkMissing",
	MsgEnroll:       "Enroll",
	MsgRelayStatus:  "RelayStatus",
	MsgHolds:        "Holds",
	MsgClockProbe:   "ClockProbe",
	MsgClockReply:   "ClockReply",
}

// Known reports whether t is a type code this version of the package
// defines. The reserved code 0x00 is not known.
func (t MsgType) Known() bool {
	_, ok := msgNames[t]
	return ok
}

// String returns the message name, or "MsgType(0xNN)" for a code this
// package does not define.
func (t MsgType) String() string {
	if n, ok := msgNames[t]; ok {
		return n
	}
	return fmt.Sprintf("MsgType(%#02x)", byte(t))
}

// Stream protocol IDs. Each is versioned by its path; an incompatible change
// gets a new path (docs/protocol/framing.md). They are plain strings here so
// that protocol/ needs no libp2p; node/ and relay/ convert them.
const (
	ProtoLog   = "/weft/log/1"
	ProtoChunk = "/weft/chunk/1"
	ProtoPair  = "/weft/pair/1"
	ProtoRelay = "/weft/relay/1"
	ProtoClock = "/weft/clock/1"
	// ProtoRecover: a holder of the recovery phrase asks for the
	// membership log and appends its recover record (msg_recover.go).
	ProtoRecover = "/weft/recover/1"
)
