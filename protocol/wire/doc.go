// Package wire is weft's wire format: the framing every stream protocol
// shares and the byte codes of the messages that ride in frames.
//
// A frame is a uvarint length, one type byte, then the payload; the length
// counts the type byte and the payload. ReadFrame checks the length against a
// maximum before it allocates anything, and reads a large payload in steps so
// that memory is only committed as the peer actually delivers bytes.
// ReadFrame never reads past the end of the frame it returns, so it can sit
// directly on an unbuffered libp2p stream and hand the rest of the stream to
// another reader. The byte layout, limits and error behaviour are specified
// in docs/protocol/framing.md.
//
// The package is pure apart from frame.go, which is the only file that
// touches an io.Reader or io.Writer. It imports no networking: node/ owns the
// libp2p streams and passes them in as io.Reader / io.Writer.
//
// # Protocol flow
//
// Each stream protocol has a versioned ID (see version.go). Message payload
// layouts are defined one family per file (msg_*.go) as they land; until a
// family's file exists, its type codes below are reserved and its flow is the
// plan from ARCHITECTURE.md, not yet a contract.
//
//	/weft/log/1    (opener A, answerer B)
//	  A -> B  Hello          protocol version, vault ID, device ID
//	  B -> A  Hello          or Error and close (not a member, wrong vault)
//	  A -> B  LogRequest     A's version vector: author -> highest sequence
//	  B -> A  Entry*         every entry A lacks, per author in sequence order
//	  B -> A  Entry*         then, on the same stream, each new entry as it is
//	                         written; there is no polling
//
//	/weft/chunk/1  (opener A, answerer B)
//	  A -> B  Hello;  B -> A  Hello (or Error and close)
//	  A -> B  WantChunks*    batches of CIDs; A may send more before answers
//	                         arrive (pipelined)
//	  B -> A  Chunk | ChunkMissing, one per wanted CID, streamed as read;
//	                         order is not guaranteed to match the want-list
//
// Either side may send Error and then close its write side; after an Error
// nothing else follows on that stream. A frame whose type the receiver does
// not know is a protocol error on that stream (ErrUnknownType), because the
// stream ID's version promises the receiver knows every type it may receive.
package wire
