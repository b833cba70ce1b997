package entry

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
	"lukechampine.com/blake3"
	"pgregory.net/rapid"

	"github.com/weftsync/weft/protocol/keys"
)

var cidCmp = cmp.Comparer(func(a, b cid.Cid) bool { return a.Equals(b) })

// genPath draws valid paths, including non-ASCII NFC names.
func genPath() *rapid.Generator[string] {
	seg := rapid.StringMatching(`[a-zA-Z0-9 ._~é日本ß-]{1,12}`).Filter(func(s string) bool { return s != "." && s != ".." })
	return rapid.Custom(func(t *rapid.T) string {
		return strings.Join(rapid.SliceOfN(seg, 1, 4).Draw(t, "segments"), "/")
	})
}

// genBody draws a valid body for an entry of author at seq.
func genBody(author keys.DeviceID, seq uint64) *rapid.Generator[*Body] {
	return rapid.Custom(func(t *rapid.T) *Body {
		paths := rapid.SliceOfNDistinct(genPath(), 0, 12, rapid.ID[string]).Draw(t, "paths")
		b := &Body{}
		for i, p := range paths {
			v := Version{Path: p, MTime: rapid.Int64().Draw(t, "mtime")}
			n := rapid.IntRange(0, 3).Draw(t, "nsup")
			for j := 0; j < n; j++ {
				a := keys.DeviceID{0xf0, byte(rapid.IntRange(0, 3).Draw(t, "author"))}
				if a == author {
					continue
				}
				v.Supersedes = append(v.Supersedes, VersionID{Author: a, Seq: uint64(j + 1), Index: uint32(i)})
			}
			slices.SortFunc(v.Supersedes, VersionID.Compare)
			v.Supersedes = slices.Compact(v.Supersedes)
			switch Kind(rapid.IntRange(1, 4).Draw(t, "kind")) {
			case KindFile:
				v.Kind, v.Mode = KindFile, uint32(rapid.IntRange(0, 0o777).Draw(t, "mode"))
				if rapid.Bool().Draw(t, "inline") {
					v.Inline = rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "inline")
					if len(v.Inline) == 0 {
						v.Inline = nil
					}
					v.Size, v.Hash = uint64(len(v.Inline)), blake3.Sum256(v.Inline)
				} else {
					for j := rapid.IntRange(1, 5).Draw(t, "nchunks"); j > 0; j-- {
						size := uint32(rapid.IntRange(1, 1<<20).Draw(t, "chunk size"))
						v.Chunks = append(v.Chunks, ChunkRef{chunkCID(fmt.Sprint(size, j)), size})
						v.Size += uint64(size)
					}
					v.Hash = blake3.Sum256([]byte(p))
				}
			case KindDir:
				v.Kind, v.Mode = KindDir, uint32(rapid.IntRange(0, 0o777).Draw(t, "mode"))
			case KindSymlink:
				v.Kind, v.Target = KindSymlink, genPath().Draw(t, "target")
				v.Size = uint64(len(v.Target))
			case KindDeletion:
				v.Kind, v.MTime = KindDeletion, 0
				if len(v.Supersedes) == 0 {
					v.Supersedes = []VersionID{{Author: keys.DeviceID{0xee}, Seq: 1}}
				}
			}
			b.Versions = append(b.Versions, v)
		}
		return b
	})
}

func TestPropBodyRoundTrip(t *testing.T) {
	f := newFixture(t)
	rapid.Check(t, func(t *rapid.T) {
		b := genBody(f.id.ID(), 1).Draw(t, "body")
		if err := b.validate(f.id.ID(), 1); err != nil {
			t.Fatalf("generator drew an invalid body: %v", err)
		}
		plain := encodeBody(b)
		got, err := decodeBody(plain)
		if err != nil {
			t.Fatalf("decodeBody: got %v, want nil", err)
		}
		if d := cmp.Diff(b, got, cidCmp); d != "" {
			t.Fatalf("body round trip (-want +got):\n%s", d)
		}
		if !bytes.Equal(encodeBody(got), plain) {
			t.Fatalf("re-encoding differs")
		}
	})
}

func TestPropEntryRoundTrip(t *testing.T) {
	f := newFixture(t)
	rapid.Check(t, func(t *rapid.T) {
		prevSeq := rapid.Uint64Range(0, 1<<40).Draw(t, "prev seq")
		head := Head{Seq: prevSeq, Clock: rapid.Uint64Range(0, 1<<50).Draw(t, "prev clock")}
		if prevSeq > 0 {
			head.CID = CIDOf([]byte(fmt.Sprint(prevSeq)))
		}
		cfg := f.config(head)
		cfg.Clock = head.Clock + rapid.Uint64Range(1, 1000).Draw(t, "clock step")
		cfg.Time = rapid.Int64().Draw(t, "time")
		cfg.Keys = keys.EpochSecret{7}.Keys(rapid.Uint32().Draw(t, "epoch"))
		b := genBody(f.id.ID(), prevSeq+1).Draw(t, "body")

		e, err := New(cfg, b)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		got, err := Validate(e.Bytes(), f.vault, head)
		if err != nil {
			t.Fatalf("Validate: got %v, want nil", err)
		}
		if !bytes.Equal(got.Bytes(), e.Bytes()) || !got.CID().Equals(e.CID()) {
			t.Fatalf("decoded entry differs")
		}
		if got.Seq() != prevSeq+1 || got.Clock() != cfg.Clock || got.Time() != cfg.Time || got.Epoch() != cfg.Keys.Epoch {
			t.Fatalf("fields: got seq %d clock %d time %d epoch %d", got.Seq(), got.Clock(), got.Time(), got.Epoch())
		}
		body, err := OpenBody(got, cfg.Keys)
		if err != nil {
			t.Fatalf("OpenBody: got %v, want nil", err)
		}
		if d := cmp.Diff(b, body, cidCmp); d != "" {
			t.Fatalf("body round trip (-want +got):\n%s", d)
		}
	})
}

// TestPropMutationNeverValidates flips, inserts, deletes or truncates bytes
// of a signed entry: no such change may validate.
func TestPropMutationNeverValidates(t *testing.T) {
	f := newFixture(t)
	e1 := mustNew(t, f.config(Head{}), sampleBody(f.other.ID()))
	e2 := mustNew(t, f.config(e1.Head()), sampleBody(f.other.ID()))
	rapid.Check(t, func(t *rapid.T) {
		raw := bytes.Clone(e2.Bytes())
		for n := rapid.IntRange(1, 3).Draw(t, "mutations"); n > 0 && len(raw) > 0; n-- {
			i := rapid.IntRange(0, len(raw)-1).Draw(t, "at")
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				raw[i] ^= byte(rapid.IntRange(1, 255).Draw(t, "xor"))
			case 1:
				raw = append(raw[:i], append([]byte{rapid.Byte().Draw(t, "ins")}, raw[i:]...)...)
			case 2:
				raw = append(raw[:i], raw[i+1:]...)
			case 3:
				raw = raw[:i]
			}
		}
		if bytes.Equal(raw, e2.Bytes()) {
			t.Skip("mutations cancelled out")
		}
		if _, err := Validate(raw, f.vault, e1.Head()); err == nil {
			t.Fatalf("mutated entry %x validated", raw)
		}
	})
}

// TestCIDMatchesLibraries pins CIDOf against go-cid and go-multihash.
func TestCIDMatchesLibraries(t *testing.T) {
	f := newFixture(t)
	e := mustNew(t, f.config(Head{}), sampleBody(f.other.ID()))
	h, err := multihash.Sum(e.Bytes(), multihash.BLAKE3, 32)
	if err != nil {
		t.Fatal(err)
	}
	want := cid.NewCidV1(cid.DagCBOR, h)
	if !e.CID().Equals(want) {
		t.Errorf("got CID %s, want %s", e.CID(), want)
	}
}
