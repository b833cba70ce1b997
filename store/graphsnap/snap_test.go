package graphsnap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

func testCID(t testing.TB, s string) cid.Cid {
	t.Helper()
	c, err := cid.Prefix{Version: 1, Codec: cid.Raw, MhType: multihash.BLAKE3, MhLength: 32}.Sum([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sample is a snapshot with one of each kind of version, a supersedes edge
// to an author that holds no reach, and a chunked file.
func sample(t testing.TB) *Snapshot {
	a, b, c := keys.DeviceID{1}, keys.DeviceID{2}, keys.DeviceID{3}
	s := &Snapshot{
		Vault: keys.VaultID{9, 9},
		Reach: map[keys.DeviceID]Reach{a: {Seq: 7, CID: testCID(t, "a7")}, b: {Seq: 1, CID: testCID(t, "b1")}},
		Clock: 42,
		HLC:   1_700_000_000_123,
	}
	s.Versions = []Version{
		{ID: protocol.VersionID{Author: a, Seq: 1}, Clock: 3, Time: 1_700_000_000_000, Text: true, Author: "Zoë's phone",
			Body: entry.Version{Path: "notes/a.md", Kind: entry.KindFile, Mode: 0o644, MTime: 1_700_000_000_000_000_000, Size: 5, Hash: [32]byte{5}}},
		{ID: protocol.VersionID{Author: a, Seq: 7, Index: 70_000}, Clock: 41, Time: -5,
			Body: entry.Version{Path: "big.bin", Kind: entry.KindFile, Mode: 0o755, Size: 3 << 20, Hash: [32]byte{7},
				Supersedes: []protocol.VersionID{{Author: c, Seq: 2, Index: 1}, {Author: a, Seq: 1}},
				Chunks:     []entry.ChunkRef{{CID: testCID(t, "x"), Size: 1 << 20}, {CID: testCID(t, "y"), Size: 2 << 20}}}},
		{ID: protocol.VersionID{Author: b, Seq: 1}, Clock: 4, Time: 1, Author: "laptop",
			Body: entry.Version{Path: "dir", Kind: entry.KindDir, Mode: 0o755}},
		{ID: protocol.VersionID{Author: b, Seq: 1, Index: 1}, Clock: 4, Time: 1,
			Body: entry.Version{Path: "link", Kind: entry.KindSymlink, Size: 8, Target: "dir/élan"}},
		{ID: protocol.VersionID{Author: b, Seq: 1, Index: 2}, Clock: 4, Time: 1,
			Body: entry.Version{Path: "gone.txt", Kind: entry.KindDeletion, Supersedes: []protocol.VersionID{{Author: a, Seq: 1}}}},
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	for _, s := range []*Snapshot{sample(t), {Reach: map[keys.DeviceID]Reach{}, Versions: []Version{}}} {
		got, err := Decode(Encode(s))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
		}
	}
}

// TestLazyEachStopsAtDamage: a lazily decoded snapshot yields the versions
// it decodes, in order, and ends with ErrCorrupt where its bytes stop
// decoding, here after the last version (the checksum holds, so only the
// decoding can tell); fn's own error stops it at once.
func TestLazyEachStopsAtDamage(t *testing.T) {
	want := sample(t)
	data := Encode(want)
	body := append(bytes.Clone(data[:len(data)-4]), 0)
	data = binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, castagnoli))
	l, err := DecodeLazy(data)
	if err != nil {
		t.Fatal(err)
	}
	if l.Vault != want.Vault || !reflect.DeepEqual(l.Reach, want.Reach) || l.Versions != nil {
		t.Fatalf("header %+v", l.Snapshot)
	}
	if l.Len() != len(want.Versions) {
		t.Fatalf("Len before Each: got %d, want %d", l.Len(), len(want.Versions))
	}
	var got []Version
	err = l.Each(func(v *Version) error {
		got = append(got, *v)
		return nil
	})
	if l.Len() != 0 {
		t.Fatalf("Len after Each: got %d, want 0", l.Len())
	}
	if !errors.Is(err, ErrCorrupt) || !reflect.DeepEqual(got, want.Versions) {
		t.Fatalf("Each: %v after %d versions, want ErrCorrupt after all %d", err, len(got), len(want.Versions))
	}
	if _, err := Decode(data); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decode: %v, want ErrCorrupt", err)
	}
	l, err = DecodeLazy(Encode(want))
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	seen := 0
	if err := l.Each(func(*Version) error { seen++; return stop }); err != stop || seen != 1 {
		t.Fatalf("Each: %v after %d versions, want fn's error after 1", err, seen)
	}
}

// TestDamageRefused: every truncation and every flipped bit of a snapshot
// is refused with ErrCorrupt (a node then replays its whole log).
func TestDamageRefused(t *testing.T) {
	data := Encode(sample(t))
	for n := range len(data) {
		if _, err := Decode(data[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: %v, want ErrCorrupt", n, err)
		}
	}
	for i := range len(data) {
		bad := bytes.Clone(data)
		bad[i] ^= 0x10
		if _, err := Decode(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: %v, want ErrCorrupt", i, err)
		}
	}
}

// TestOtherFormatRefused: a snapshot of another format version is not read
// as this one, even with a good checksum.
func TestOtherFormatRefused(t *testing.T) {
	data := Encode(sample(t))
	data[len(magic)] = format + 1
	data = reseal(data[:len(data)-4])
	if _, err := Decode(data); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("format %d: %v, want ErrCorrupt", format+1, err)
	}
}

// TestFormat1StillReads: a snapshot written before versions carried their
// author's name (format 1: no name flag) still reads, so an upgrade does
// not replay the whole log; a format-1 snapshot claiming a name is
// refused.
func TestFormat1StillReads(t *testing.T) {
	s := sample(t)
	for i := range s.Versions {
		s.Versions[i].Author = ""
	}
	data := Encode(s)
	data[len(magic)] = format1
	got, err := Decode(reseal(data[:len(data)-4]))
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("format 1: %v", err)
	}
	named := Encode(sample(t))
	named[len(magic)] = format1
	if _, err := Decode(reseal(named[:len(named)-4])); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("format 1 with a name: %v, want ErrCorrupt", err)
	}
}

// reseal appends a good checksum to body.
func reseal(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, castagnoli))
}

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "graph.snap")
	if s, err := Read(path); s != nil || err != nil {
		t.Fatalf("missing snapshot: %v, %v; want nil, nil", s, err)
	}
	want := sample(t)
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("read back: %v, %v", got, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
	if err := os.WriteFile(path, []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged file: %v, want ErrCorrupt", err)
	}
}

// FuzzDecode: any bytes decode or fail with ErrCorrupt, never panic, and
// whatever decodes survives an encode and decode unchanged.
func FuzzDecode(f *testing.F) {
	f.Add(Encode(sample(f)))
	f.Add(Encode(&Snapshot{}))
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := Decode(Encode(s))
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, s) {
			t.Fatalf("decoded snapshot changes through encode and decode")
		}
	})
}

// TestEncodesEveryField: the snapshot encodes every field of a version
// body and chunk reference but Inline (never kept in memory, so never
// snapshotted). A field added to entry.Version or entry.ChunkRef fails
// here until Encode and Decode carry it (and the format number moves):
// otherwise a restart from a snapshot would silently drop it.
func TestEncodesEveryField(t *testing.T) {
	for _, c := range []struct {
		typ  reflect.Type
		want []string
	}{
		{reflect.TypeFor[entry.Version](), []string{"Path", "Kind", "Mode", "MTime", "Size", "Supersedes", "Hash", "Chunks", "Inline", "Target"}},
		{reflect.TypeFor[entry.ChunkRef](), []string{"CID", "Size"}},
		{reflect.TypeFor[Version](), []string{"ID", "Clock", "Time", "Text", "Author", "Body"}},
		{reflect.TypeFor[protocol.VersionID](), []string{"Author", "Seq", "Index"}},
	} {
		var got []string
		for f := range c.typ.Fields() {
			got = append(got, f.Name)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v has fields %v; the snapshot format encodes %v", c.typ, got, c.want)
		}
	}
}
