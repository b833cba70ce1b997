package wire

// ProtocolVersion is the version of the wire format as a whole, sent in
// Hello. It goes up by one with every change to any message or to framing,
// compatible or not, so that a peer can tell exactly what the other speaks
// and refuse, or work around, a version it knows to be broken.
//
// Compatibility itself is carried by the stream protocol IDs below: an
// incompatible change to a stream's messages gets a new ID (/weft/log/2),
// which libp2p's multistream-select negotiates, and a node may serve the old
// and new IDs side by side during a transition. A new message type counts as
// incompatible (a receiver treats an unknown type as a protocol error, see
// doc.go) unless the sender only sends it once the peer's Hello shows a
// ProtocolVersion that knows it; that gating is what ProtocolVersion is for.
//
// Changelog:
//
//	1  framing: uvarint length (type + payload), 1-byte type, payload;
//	   MaxFrameSize 8 MiB; type codes Hello, Error, LogRequest, Entry,
//	   WantChunks, Chunk, ChunkMissing; then, before any release and
//	   without a bump, LogStatus, PairRequest, PairAccept, Member, Peers,
//	   Enroll, RelayStatus.
//	2  LogRequest (and LogStatus, which shares its layout) ends with the
//	   sender's membership sequence (uvarint); a device's LogStatus after
//	   the first on a stream carries only the authors that changed.
//	   Incompatible with 1, which no released build speaks, so the stream
//	   ID stays /weft/log/1.
//	3  a log stream's opener that refuses an entry may send one Error
//	   (code 9 log forked, or 6 invalid entry) before it ends the stream;
//	   a relay sends Holds (0x52) on log streams devices open to it. No
//	   released build speaks 2, so the stream ID stays /weft/log/1.
//	4  the /weft/clock/1 stream with ClockProbe and ClockReply (new
//	   codes on a new stream ID); an entry's time is a hybrid logical
//	   clock and concurrent versions are ranked by it, not by mtime
//	   (protocol.WinnerOrder). An older device ranks them otherwise, and
//	   two devices that pick different winners would resolve the same
//	   conflict back and forth, so a node refuses a version-3 Hello; no
//	   released build speaks 3.
const ProtocolVersion = 4

// Stream protocol IDs. node/ converts them to libp2p's protocol.ID; they are
// plain strings here so that this package imports no networking.
const (
	// LogProtocol exchanges version vectors and streams log entries.
	LogProtocol = "/weft/log/1"
	// ChunkProtocol serves want-lists of encrypted chunks.
	ChunkProtocol = "/weft/chunk/1"
)
