package wire

import (
	"fmt"
	"unicode/utf8"

	"github.com/weftsync/weft/protocol/keys"
)

// Hello opens every stream, from each side.
//
// Payload layout:
//
//	version (uvarint) | vault ID (32 bytes)
//
// The sender's device ID is not in the message: libp2p has already
// authenticated the peer, and its peer ID is its device ID.
type Hello struct {
	Version uint64
	Vault   keys.VaultID
}

// AppendBinary appends the payload of h to b.
func (h Hello) AppendBinary(b []byte) []byte {
	b = appendUvarint(b, h.Version)
	return append(b, h.Vault[:]...)
}

// ParseHello parses a Hello payload.
func ParseHello(p []byte) (Hello, error) {
	var h Hello
	ps := parser{b: p}
	h.Version = ps.uvarint("hello version")
	copy(h.Vault[:], ps.fixed(32, "hello vault"))
	return h, ps.end()
}

// ErrorCode says why a peer gave up on a stream.
type ErrorCode uint64

// Error codes. Never reuse one.
const (
	CodeInternal      ErrorCode = 1 // the sender failed; try again later
	CodeNotMember     ErrorCode = 2 // the opener is not a member of the vault
	CodeUnknownVault  ErrorCode = 3 // the answerer does not serve that vault
	CodeBadVersion    ErrorCode = 4 // unsupported protocol version
	CodeProtocol      ErrorCode = 5 // a malformed or unexpected message
	CodeInvalidEntry  ErrorCode = 6 // an entry failed validation
	CodeQuotaExceeded ErrorCode = 7 // a relay's per-vault quota is reached
	CodeInviteInvalid ErrorCode = 8 // pairing: the invite is unknown, used or expired, or the proof is wrong
	// CodeLogForked: the opener of a log stream refused an entry of the
	// answerer's own log that does not chain onto what the opener holds
	// of that log: the answerer's log has forked. Sent by the opener on
	// the stream before it ends it; an answerer that does not read it
	// loses nothing.
	CodeLogForked   ErrorCode = 9
	CodeRateLimited ErrorCode = 10 // pairing: too many attempts from this identity or in total; try again later
	// CodeNotRecoverable: recovery asked of a vault made without
	// member.FlagRecoverable.
	CodeNotRecoverable ErrorCode = 11
	// CodeJoinDenied: pairing: the join waited for approval and was denied,
	// or no one approved it in time, or another device's was approved.
	CodeJoinDenied ErrorCode = 12
)

// ReasonNotMember is the one answer (with CodeNotMember) to a Hello from a
// peer that may not open the stream, whether the answerer does not serve
// the vault named or serves it and the peer is not one of its members: an
// outsider learns nothing from it about which vaults the answerer serves
// (docs/security.md, "What an outsider learns").
const ReasonNotMember = "not a member of a vault served here"

// MaxReasonLen bounds an Error's reason.
const MaxReasonLen = 1024

// Error is the last message a sender puts on a stream.
//
// Payload layout:
//
//	code (uvarint) | reason (rest of payload, UTF-8, at most MaxReasonLen bytes)
type Error struct {
	Code   ErrorCode
	Reason string
}

func (e Error) Error() string { return fmt.Sprintf("peer error %d: %s", e.Code, e.Reason) }

// AppendBinary appends the payload of e to b. A reason that is too long is
// cut at a rune boundary.
func (e Error) AppendBinary(b []byte) []byte {
	b = appendUvarint(b, uint64(e.Code))
	r := e.Reason
	for len(r) > MaxReasonLen {
		_, size := utf8.DecodeLastRuneInString(r)
		r = r[:len(r)-size]
	}
	return append(b, r...)
}

// ParseError parses an Error payload.
func ParseError(p []byte) (Error, error) {
	ps := parser{b: p}
	code := ps.uvarint("error code")
	if ps.err != nil {
		return Error{}, ps.err
	}
	if len(ps.b) > MaxReasonLen || !utf8.Valid(ps.b) {
		return Error{}, fmt.Errorf("%w: error reason is too long or not UTF-8", ErrMalformedPayload)
	}
	return Error{Code: ErrorCode(code), Reason: string(ps.b)}, nil
}
