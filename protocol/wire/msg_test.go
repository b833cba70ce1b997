package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"
	_ "github.com/multiformats/go-multihash/register/blake3"

	"github.com/weftsync/weft/protocol/keys"
)

func testCID(t testing.TB, s string) cid.Cid {
	t.Helper()
	sum, err := mh.Sum([]byte(s), mh.BLAKE3, 32)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.Raw, sum)
}

// message is what every payload type offers.
type message interface{ AppendBinary([]byte) []byte }

// TestMessageGolden pins each payload's bytes (appended onto a non-empty
// prefix to prove append semantics) and checks that it parses back.
func TestMessageGolden(t *testing.T) {
	c1 := testCID(t, "one")
	prefix := []byte{0xde, 0xad}
	tests := []struct {
		name  string
		msg   message
		hex   string
		parse func([]byte) (any, error)
	}{
		{"hello", Hello{Version: 1, Vault: keys.VaultID{0xaa, 0xbb}}, "01aabb" + zeros(30),
			func(p []byte) (any, error) { return ParseHello(p) }},
		{"error", Error{Code: CodeNotMember, Reason: "not a member"}, "02" + hex.EncodeToString([]byte("not a member")),
			func(p []byte) (any, error) { return ParseError(p) }},
		{"log request", LogRequest{Vector: []VectorEntry{{Author: keys.DeviceID{2}, Seq: 300}, {Author: keys.DeviceID{1}, Seq: 5}}, MemberSeq: 1000},
			"02" + "01" + zeros(31) + "05" + "02" + zeros(31) + "ac02" + "e807",
			func(p []byte) (any, error) {
				r, err := ParseLogRequest(p)
				// The encoder sorts; compare against the sorted form.
				return LogRequest{Vector: []VectorEntry{r.Vector[1], r.Vector[0]}, MemberSeq: r.MemberSeq}, err
			}},
		{"log request empty", LogRequest{}, "00" + "00",
			func(p []byte) (any, error) {
				r, err := ParseLogRequest(p)
				if len(r.Vector) == 0 {
					r.Vector = nil // the parser allocates; nil and empty mean the same
				}
				return r, err
			}},
		{"log status", LogStatus{Vector: []VectorEntry{{Author: keys.DeviceID{1}, Seq: 1}}, MemberSeq: 3},
			"01" + "01" + zeros(31) + "01" + "03",
			func(p []byte) (any, error) { return ParseLogStatus(p) }},
		{"want", WantChunks{CIDs: []cid.Cid{c1}}, "01" + "24" + hex.EncodeToString(c1.Bytes()),
			func(p []byte) (any, error) { return ParseWantChunks(p) }},
		{"chunk", Chunk{CID: c1, Envelope: []byte{1, 2, 3}}, "24" + hex.EncodeToString(c1.Bytes()) + "010203",
			func(p []byte) (any, error) { return ParseChunk(p) }},
		{"missing", ChunkMissing{CID: c1}, "24" + hex.EncodeToString(c1.Bytes()),
			func(p []byte) (any, error) { return ParseChunkMissing(p) }},
		{"pair request", PairRequest{Proof: []byte{9, 9}}, "020909",
			func(p []byte) (any, error) { return ParsePairRequest(p) }},
		{"pair request with a name", PairRequest{Proof: []byte{9, 9}, Name: "ab"}, "020909" + "026162",
			func(p []byte) (any, error) { return ParsePairRequest(p) }},
		{"peers", Peers{Peers: []PeerAddrs{{Device: keys.DeviceID{1}, Addrs: []string{"/ip4/1.2.3.4/tcp/1"}}}}, "01" + "01" + zeros(31) + "01" + "12" + hex.EncodeToString([]byte("/ip4/1.2.3.4/tcp/1")),
			func(p []byte) (any, error) { return ParsePeers(p) }},
		{"pair accept", PairAccept{WrappedKeys: []byte{7}, Records: [][]byte{{1}, {2, 3}}}, "0107" + "02" + "0101" + "020203",
			func(p []byte) (any, error) { return ParsePairAccept(p) }},
		{"recover proof", RecoverProof{Proof: []byte{9, 9}}, "020909",
			func(p []byte) (any, error) { return ParseRecoverProof(p) }},
		{"member log", MemberLog{Records: [][]byte{{1}, {2, 3}}}, "02" + "0101" + "020203",
			func(p []byte) (any, error) { return ParseMemberLog(p) }},
		{"enroll", Enroll{Vault: keys.VaultID{0xcc}, Records: [][]byte{{1, 2}}}, "cc" + zeros(31) + "01" + "020102",
			func(p []byte) (any, error) { return ParseEnroll(p) }},
		{"relay status", RelayStatus{Vault: keys.VaultID{0xcc}, Bytes: 300, BytesLimit: 1000, Entries: 2, EntriesLimit: 0, Full: true}, "cc" + zeros(31) + "ac02" + "e807" + "02" + "00" + "01",
			func(p []byte) (any, error) { return ParseRelayStatus(p) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.msg.AppendBinary(bytes.Clone(prefix))
			if !bytes.Equal(got[:2], prefix) {
				t.Fatalf("prefix overwritten: %x", got)
			}
			if h := hex.EncodeToString(got[2:]); h != tt.hex {
				t.Fatalf("got %s, want %s", h, tt.hex)
			}
			back, err := tt.parse(got[2:])
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if d := cmp.Diff(tt.msg, back, cmp.Comparer(func(a, b cid.Cid) bool { return a.Equals(b) })); d != "" {
				t.Fatalf("round trip (-want +got):\n%s", d)
			}
		})
	}
}

func zeros(n int) string { return hex.EncodeToString(make([]byte, n)) }

func TestMessageRejects(t *testing.T) {
	c1 := testCID(t, "one")
	h := func(s string) []byte { b, _ := hex.DecodeString(s); return b }
	tests := []struct {
		name  string
		parse func([]byte) error
		in    []byte
	}{
		{"hello short", func(p []byte) error { _, err := ParseHello(p); return err }, h("01aabb")},
		{"hello trailing", func(p []byte) error { _, err := ParseHello(p); return err }, h("01" + zeros(33))},
		{"hello padded version", func(p []byte) error { _, err := ParseHello(p); return err }, h("8100" + zeros(32))},
		{"error not utf8", func(p []byte) error { _, err := ParseError(p); return err }, h("01ff")},
		{"error too long", func(p []byte) error { _, err := ParseError(p); return err }, append([]byte{1}, bytes.Repeat([]byte{'a'}, MaxReasonLen+1)...)},
		{"vector huge count", func(p []byte) error { _, err := ParseLogRequest(p); return err }, h("ffffffffffffffff7f")},
		{"vector count beyond bytes", func(p []byte) error { _, err := ParseLogRequest(p); return err }, h("05" + "01" + zeros(31) + "05" + "00")},
		{"vector unsorted", func(p []byte) error { _, err := ParseLogRequest(p); return err }, h("02" + "02" + zeros(31) + "01" + "01" + zeros(31) + "01" + "00")},
		{"vector duplicate", func(p []byte) error { _, err := ParseLogRequest(p); return err }, h("02" + "01" + zeros(31) + "01" + "01" + zeros(31) + "01" + "00")},
		{"log request without member seq", func(p []byte) error { _, err := ParseLogRequest(p); return err }, h("01" + "01" + zeros(31) + "05")},
		{"log request padded member seq", func(p []byte) error { _, err := ParseLogRequest(p); return err }, h("00" + "8000")},
		{"log request trailing", func(p []byte) error { _, err := ParseLogRequest(p); return err }, h("00" + "00" + "00")},
		{"want over limit", func(p []byte) error { _, err := ParseWantChunks(p); return err }, append([]byte{0x81, 0x08}, bytes.Repeat([]byte{0}, 4000)...)},
		{"want bad cid", func(p []byte) error { _, err := ParseWantChunks(p); return err }, h("010300ff00")},
		{"want cid too long", func(p []byte) error { _, err := ParseWantChunks(p); return err }, h("01ff01")},
		{"chunk no cid", func(p []byte) error { _, err := ParseChunk(p); return err }, h("")},
		{"missing trailing", func(p []byte) error { _, err := ParseChunkMissing(p); return err }, append(ChunkMissing{CID: c1}.AppendBinary(nil), 0)},
		{"pair proof too long", func(p []byte) error { _, err := ParsePairRequest(p); return err }, append([]byte{65}, make([]byte, 65)...)},
		{"pair request with an empty name", func(p []byte) error { _, err := ParsePairRequest(p); return err }, h("01090" + "0")},
		{"pair request name too long", func(p []byte) error { _, err := ParsePairRequest(p); return err }, append(h("010941"), make([]byte, 65)...)},
		{"peers unsorted", func(p []byte) error { _, err := ParsePeers(p); return err }, h("02" + "02" + zeros(31) + "00" + "01" + zeros(31) + "00")},
		{"peers too many addrs", func(p []byte) error { _, err := ParsePeers(p); return err }, append(h("01"+zeros(32)+"11"), bytes.Repeat([]byte{0}, 17)...)},
		{"pair accept record too long", func(p []byte) error { _, err := ParsePairAccept(p); return err }, h("0001ffff01")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.parse(tt.in); !errors.Is(err, ErrMalformedPayload) {
				t.Fatalf("got %v, want %v", err, ErrMalformedPayload)
			}
		})
	}
}

// FuzzParseMessages feeds the same bytes to every payload parser: none may
// panic, and whatever parses must re-encode to exactly its input.
func FuzzParseMessages(f *testing.F) {
	c1 := testCID(f, "seed")
	f.Add(Hello{Version: 1}.AppendBinary(nil))
	f.Add(LogRequest{Vector: []VectorEntry{{Seq: 3}}}.AppendBinary(nil))
	f.Add(LogRequest{Vector: []VectorEntry{{Seq: 3}}, MemberSeq: 1 << 20}.AppendBinary(nil))
	f.Add(LogRequest{}.AppendBinary(nil))
	f.Add(WantChunks{CIDs: []cid.Cid{c1, c1}}.AppendBinary(nil))
	f.Add(Chunk{CID: c1, Envelope: []byte("x")}.AppendBinary(nil))
	f.Add(PairAccept{WrappedKeys: []byte{1}, Records: [][]byte{{1}}}.AppendBinary(nil))
	f.Add(PairRequest{Proof: make([]byte, 32), Name: "laptop"}.AppendBinary(nil))
	f.Add(Enroll{Records: [][]byte{{1}, {2, 3}}}.AppendBinary(nil))
	f.Add(RecoverProof{Proof: make([]byte, 64)}.AppendBinary(nil))
	f.Add(MemberLog{Records: [][]byte{{1}, {2, 3}}}.AppendBinary(nil))
	f.Add(RelayStatus{Bytes: 1 << 40, Full: true}.AppendBinary(nil))
	f.Add(Holds{Devices: []DeviceHolds{{Device: keys.DeviceID{1}, Vector: []VectorEntry{{Seq: 2}, {Author: keys.DeviceID{3}, Seq: 9}}}, {Device: keys.DeviceID{2}}}}.AppendBinary(nil))
	f.Fuzz(func(t *testing.T, p []byte) {
		check := func(m message, err error) {
			if err != nil {
				return
			}
			if got := m.AppendBinary(nil); !bytes.Equal(got, p) {
				t.Fatalf("%T parsed but re-encodes to %x, input %x", m, got, p)
			}
		}
		h, err := ParseHello(p)
		check(h, err)
		e, err := ParseError(p)
		check(e, err)
		r, err := ParseLogRequest(p)
		check(r, err)
		w, err := ParseWantChunks(p)
		check(w, err)
		c, err := ParseChunk(p)
		check(c, err)
		m, err := ParseChunkMissing(p)
		check(m, err)
		pr, err := ParsePairRequest(p)
		check(pr, err)
		pa, err := ParsePairAccept(p)
		check(pa, err)
		pe, err := ParsePeers(p)
		check(pe, err)
		en, err := ParseEnroll(p)
		check(en, err)
		rs, err := ParseRelayStatus(p)
		check(rs, err)
		ho, err := ParseHolds(p)
		check(ho, err)
		rp, err := ParseRecoverProof(p)
		check(rp, err)
		ml, err := ParseMemberLog(p)
		check(ml, err)
	})
}

func TestVectorOfAndMap(t *testing.T) {
	v := map[keys.DeviceID]uint64{{1}: 5, {2}: 300}
	back := VectorMap(VectorOf(v))
	if len(back) != 2 || back[keys.DeviceID{1}] != 5 || back[keys.DeviceID{2}] != 300 {
		t.Errorf("got %v, want %v", back, v)
	}
}

func TestHoldsRoundTrip(t *testing.T) {
	h := Holds{Devices: []DeviceHolds{
		{Device: keys.DeviceID{1}, Vector: []VectorEntry{{Author: keys.DeviceID{9}, Seq: 4}, {Author: keys.DeviceID{2}, Seq: 300}}},
		{Device: keys.DeviceID{7}},
	}}
	got, err := ParseHolds(h.AppendBinary(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Devices) != 2 || got.Devices[0].Device != (keys.DeviceID{1}) || len(got.Devices[0].Vector) != 2 ||
		got.Devices[0].Vector[0].Author != (keys.DeviceID{2}) || got.Devices[0].Vector[1].Seq != 4 || len(got.Devices[1].Vector) != 0 {
		t.Fatalf("round trip: got %+v from %+v", got, h)
	}
	// Devices out of order have no encoding.
	bad := Holds{Devices: []DeviceHolds{{Device: keys.DeviceID{7}}, {Device: keys.DeviceID{1}}}}
	if _, err := ParseHolds(bad.AppendBinary(nil)); !errors.Is(err, ErrMalformedPayload) {
		t.Fatalf("devices out of order: got %v, want %v", err, ErrMalformedPayload)
	}
}
