package entry

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ipfs/go-cid"
	"lukechampine.com/blake3"
)

func TestOpenBodyRoundTrip(t *testing.T) {
	f := newFixture(t)
	want := sampleBody(f.other.ID())
	e := mustNew(t, f.config(Head{}), want)
	got, err := OpenBody(e, f.ek)
	if err != nil {
		t.Fatalf("OpenBody: got %v, want nil", err)
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b cid.Cid) bool { return a.Equals(b) })); d != "" {
		t.Errorf("body mismatch (-want +got):\n%s", d)
	}
	if n := len(e.Headers()[1].Refs); n != 2 {
		t.Errorf("chunked file: got %d public refs, want 2", n)
	}
	if got := e.Headers()[4].Supersedes; len(got) != 1 || got[0] != want.Versions[4].Supersedes[0] {
		t.Errorf("deletion: got public supersedes %v, want %v", got, want.Versions[4].Supersedes)
	}
}

func TestOpenBodyRejects(t *testing.T) {
	f := newFixture(t)
	e1 := mustNew(t, f.config(Head{}), sampleBody(f.other.ID()))
	e2 := mustNew(t, f.config(e1.Head()), sampleBody(f.other.ID()))
	plain := encodeBody(sampleBody(f.other.ID()))

	// rebody forges e with another sealed body (and optionally headers).
	rebody := func(e *Entry, body []byte, hs func(w *wireEntry)) *Entry {
		w := wireOf(t, e)
		w.Body = body
		if hs != nil {
			hs(&w)
		}
		out, err := Decode(forge(f.id, w))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// plainWith returns the sample body with one version changed, encoded.
	plainWith := func(mut func(b *Body)) []byte {
		b := sampleBody(f.other.ID())
		mut(b)
		return encodeBody(b)
	}
	tampered := bytes.Clone(e1.SealedBody())
	tampered[30] ^= 1
	wrongEpoch := f.ek
	wrongEpoch.Epoch = 1
	wrongKey := f.ek
	wrongKey.Body[0] ^= 1

	tests := []struct {
		name string
		e    *Entry
		want error
	}{
		{"keys of another epoch", e1, ErrWrongEpoch},
		{"wrong key", e1, ErrBodyAuth},
		{"tampered ciphertext", rebody(e1, tampered, nil), ErrBodyAuth},
		{"body replayed under another sequence", rebody(e2, e1.SealedBody(), nil), ErrBodyAuth},
		{"not CBOR", rebody(e1, sealFor(f, []byte{0xff}, 1), nil), ErrMalformed},
		{"non-canonical body", rebody(e1, sealFor(f, append([]byte{0x81, 0x98, 0x05}, plain[2:]...), 1), nil), ErrNonCanonical},
		{"bad path", rebody(e1, sealFor(f, plainWith(func(b *Body) { b.Versions[0].Path = "/abs" }), 1), nil), ErrBadPath},
		{"non-NFC path", rebody(e1, sealFor(f, plainWith(func(b *Body) { b.Versions[0].Path = "e\u0301" }), 1), nil), ErrBadPath},
		{"unknown kind", rebody(e1, sealFor(f, plainWith(func(b *Body) { b.Versions[2].Kind = 9 }), 1), nil), ErrBadVersion},
		{"duplicate path", rebody(e1, sealFor(f, plainWith(func(b *Body) { b.Versions[2].Path = b.Versions[3].Path }), 1), nil), ErrBadVersion},
		{"fewer headers than versions", rebody(e1, e1.SealedBody(), func(w *wireEntry) { w.Headers = w.Headers[:4] }), ErrHeaderMismatch},
		{"header ref differs", rebody(e1, e1.SealedBody(), func(w *wireEntry) { w.Headers[1].Refs[1] = chunkCID("z").Bytes() }), ErrHeaderMismatch},
		{"header refs missing", rebody(e1, e1.SealedBody(), func(w *wireEntry) { w.Headers[1].Refs = nil }), ErrHeaderMismatch},
		{"header supersedes differs", rebody(e1, e1.SealedBody(), func(w *wireEntry) { w.Headers[4].Supersedes[0].Index = 2 }), ErrHeaderMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := f.ek
			switch tt.name {
			case "keys of another epoch":
				k = wrongEpoch
			case "wrong key":
				k = wrongKey
			}
			_, err := OpenBody(tt.e, k)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got error %v, want %v", err, tt.want)
			}
			// OpenStoredBody rejects the same, except a non-canonical
			// body, which its author's key sealed (see OpenStoredBody).
			_, err = OpenStoredBody(tt.e, k)
			if tt.want == ErrNonCanonical {
				if err != nil {
					t.Fatalf("OpenStoredBody: got error %v, want nil", err)
				}
			} else if !errors.Is(err, tt.want) {
				t.Fatalf("OpenStoredBody: got error %v, want %v", err, tt.want)
			}
		})
	}
}

func TestVersionRules(t *testing.T) {
	f := newFixture(t)
	c := chunkCID("c")
	hello := blake3.Sum256([]byte("hello"))
	sup := []VersionID{{Author: f.other.ID(), Seq: 1}}
	tests := []struct {
		name string
		v    Version
		want error // nil: valid
	}{
		{"inline file", inlineFile("f", "hello"), nil},
		{"empty file", inlineFile("f", ""), nil},
		{"inline at limit", inlineFile("f", string(make([]byte, InlineLimit))), nil},
		{"chunked file", Version{Path: "f", Kind: KindFile, Size: 10, Chunks: []ChunkRef{{c, 4}, {c, 6}}}, nil},
		{"small chunked file", Version{Path: "f", Kind: KindFile, Size: 4, Chunks: []ChunkRef{{c, 4}}}, nil},
		{"executable", Version{Path: "f", Kind: KindFile, Mode: 0o755, Size: 5, Hash: hello, Inline: []byte("hello")}, nil},
		{"dir", Version{Path: "d", Kind: KindDir, Mode: 0o700}, nil},
		{"symlink", Version{Path: "l", Kind: KindSymlink, Size: 3, Target: "../"}, nil},
		{"deletion", Version{Path: "x", Kind: KindDeletion, Supersedes: sup}, nil},
		{"confirmed deletion", Version{Path: "x", Kind: KindDeletion, Mode: DeletionConfirmed, Supersedes: sup}, nil},
		{"kind zero", Version{Path: "f"}, ErrBadVersion},
		{"kind five", Version{Path: "f", Kind: 5}, ErrBadVersion},
		{"bad path", Version{Path: "a/../b", Kind: KindDir}, ErrBadPath},
		{"setuid file", Version{Path: "f", Kind: KindFile, Mode: 0o4755, Size: 5, Hash: hello, Inline: []byte("hello")}, ErrBadVersion},
		{"inline over limit", Version{Path: "f", Kind: KindFile, Size: InlineLimit + 1, Inline: make([]byte, InlineLimit+1)}, ErrBadVersion},
		{"inline size mismatch", Version{Path: "f", Kind: KindFile, Size: 4, Hash: hello, Inline: []byte("hello")}, ErrBadVersion},
		{"inline hash mismatch", Version{Path: "f", Kind: KindFile, Size: 5, Inline: []byte("hello")}, ErrBadVersion},
		{"chunks and inline", Version{Path: "f", Kind: KindFile, Size: 4, Chunks: []ChunkRef{{c, 4}}, Inline: []byte("abcd")}, ErrBadVersion},
		{"chunk sizes disagree", Version{Path: "f", Kind: KindFile, Size: 11, Chunks: []ChunkRef{{c, 4}, {c, 6}}}, ErrBadVersion},
		{"zero-size chunk", Version{Path: "f", Kind: KindFile, Size: 4, Chunks: []ChunkRef{{c, 4}, {c, 0}}}, ErrBadVersion},
		{"undefined chunk CID", Version{Path: "f", Kind: KindFile, Size: 4, Chunks: []ChunkRef{{cid.Undef, 4}}}, ErrMalformed},
		{"file with target", Version{Path: "f", Kind: KindFile, Target: "x", Hash: blake3.Sum256(nil)}, ErrBadVersion},
		{"dir with size", Version{Path: "d", Kind: KindDir, Size: 1}, ErrBadVersion},
		{"dir with inline", Version{Path: "d", Kind: KindDir, Inline: []byte("x")}, ErrBadVersion},
		{"symlink empty target", Version{Path: "l", Kind: KindSymlink}, ErrBadVersion},
		{"symlink with inline", Version{Path: "l", Kind: KindSymlink, Size: 1, Target: "x", Inline: []byte("x")}, ErrBadVersion},
		{"symlink size mismatch", Version{Path: "l", Kind: KindSymlink, Size: 2, Target: "x"}, ErrBadVersion},
		{"symlink NUL target", Version{Path: "l", Kind: KindSymlink, Size: 3, Target: "a\x00b"}, ErrBadVersion},
		{"symlink with mode", Version{Path: "l", Kind: KindSymlink, Mode: 0o777, Size: 1, Target: "x"}, ErrBadVersion},
		{"deletion without supersedes", Version{Path: "x", Kind: KindDeletion}, ErrBadVersion},
		{"deletion with size", Version{Path: "x", Kind: KindDeletion, Size: 1, Supersedes: sup}, ErrBadVersion},
		{"deletion with mtime", Version{Path: "x", Kind: KindDeletion, MTime: 1, Supersedes: sup}, ErrBadVersion},
		{"deletion with a mode beyond confirmed", Version{Path: "x", Kind: KindDeletion, Mode: 0o644, Supersedes: sup}, ErrBadVersion},
		{"supersedes duplicate", Version{Path: "d", Kind: KindDir, Supersedes: []VersionID{sup[0], sup[0]}}, ErrMalformed},
		{"supersedes own entry", Version{Path: "d", Kind: KindDir, Supersedes: []VersionID{{Author: f.id.ID(), Seq: 5}}}, ErrMalformed},
		{"supersedes too many", Version{Path: "d", Kind: KindDir, Supersedes: make([]VersionID, MaxSupersedes+1)}, ErrTooManySupersedes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Body{Versions: []Version{tt.v}}
			err := b.validate(f.id.ID(), 5)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Fatalf("got error %v, want %v", err, tt.want)
			}
		})
	}
}
