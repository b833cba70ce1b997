package entry

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"lukechampine.com/blake3"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
)

// modePerm is the only part of a mode that travels: rwx for user, group and
// other. Set-user-ID, set-group-ID and sticky bits never sync, so a vault
// cannot plant a setuid binary on another device.
const modePerm = 0o777

// validate checks the body's versions against the rules on Version, with
// author and seq those of the entry that carries it. It also bounds counts,
// so New cannot build what Decode would reject.
func (b *Body) validate(author keys.DeviceID, seq uint64) error {
	if b.Author != "" {
		if err := member.CheckName(b.Author); err != nil {
			return fmt.Errorf("%w: the author's name: %w", ErrMalformed, err)
		}
	}
	if len(b.Versions) > MaxVersions {
		return fmt.Errorf("%d versions, limit %d: %w", len(b.Versions), MaxVersions, ErrTooManyVersions)
	}
	refs := 0
	paths := make(map[string]struct{}, len(b.Versions))
	for i := range b.Versions {
		v := &b.Versions[i]
		refs += len(v.Chunks)
		if len(v.Supersedes) > MaxSupersedes {
			return fmt.Errorf("version %d supersedes %d, limit %d: %w", i, len(v.Supersedes), MaxSupersedes, ErrTooManySupersedes)
		}
		if err := v.validate(); err != nil {
			return fmt.Errorf("version %d: %w", i, err)
		}
		if err := checkSupersedes(v.Supersedes, author, seq); err != nil {
			return fmt.Errorf("version %d: %w", i, err)
		}
		if _, dup := paths[v.Path]; dup {
			return fmt.Errorf("version %d: %w: path %q appears twice in one body", i, ErrBadVersion, v.Path)
		}
		paths[v.Path] = struct{}{}
	}
	if refs > MaxRefs {
		return fmt.Errorf("%d chunk references, limit %d: %w", refs, MaxRefs, ErrTooManyRefs)
	}
	return nil
}

// validate checks one version against the per-kind rules on Version.
func (v *Version) validate() error {
	if err := ValidatePath(v.Path); err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s %q: %s", ErrBadVersion, v.Kind, v.Path, fmt.Sprintf(format, args...))
	}
	var zero [32]byte
	switch v.Kind {
	case KindFile:
		if v.Mode&^modePerm != 0 {
			return bad("mode %#o has bits beyond %#o", v.Mode, modePerm)
		}
		if v.Target != "" {
			return bad("has a symlink target")
		}
		if len(v.Chunks) > 0 {
			if len(v.Inline) > 0 {
				return bad("has both chunks and inline bytes")
			}
			// A version lists chunks or pieces, never both.
			prefix, what := chunkCIDPrefix, "chunk"
			if v.HasPieces() {
				prefix, what = pieceCIDPrefix, "piece"
			}
			var sum uint64
			for j, c := range v.Chunks {
				if err := checkCID(c.CID, prefix, what); err != nil {
					return fmt.Errorf("%s %d: %w", what, j, err)
				}
				if c.Size == 0 {
					return bad("%s %d has size 0", what, j)
				}
				sum += uint64(c.Size)
			}
			if sum != v.Size {
				return bad("%ss hold %d bytes, size says %d", what, sum, v.Size)
			}
			return nil
		}
		if v.Size > InlineLimit {
			return bad("size %d without chunks exceeds the inline limit %d", v.Size, InlineLimit)
		}
		if uint64(len(v.Inline)) != v.Size {
			return bad("inline holds %d bytes, size says %d", len(v.Inline), v.Size)
		}
		if blake3.Sum256(v.Inline) != v.Hash {
			return bad("hash does not match inline bytes")
		}
		return nil
	case KindDir:
		if v.Mode&^modePerm != 0 {
			return bad("mode %#o has bits beyond %#o", v.Mode, modePerm)
		}
		if v.Size != 0 || v.Hash != zero || len(v.Chunks) > 0 || len(v.Inline) > 0 || v.Target != "" {
			return bad("has content")
		}
		return nil
	case KindSymlink:
		if v.Mode != 0 || v.Hash != zero || len(v.Chunks) > 0 || len(v.Inline) > 0 {
			return bad("has a mode, hash or content")
		}
		if v.Target == "" || len(v.Target) > MaxTargetLen {
			return bad("target of %d bytes, want 1..%d", len(v.Target), MaxTargetLen)
		}
		if !utf8.ValidString(v.Target) || strings.IndexByte(v.Target, 0) >= 0 {
			return bad("target is not valid UTF-8 without NUL")
		}
		if v.Size != uint64(len(v.Target)) {
			return bad("size %d, target has %d bytes", v.Size, len(v.Target))
		}
		return nil
	case KindDeletion:
		if len(v.Supersedes) == 0 {
			return bad("supersedes nothing")
		}
		if v.Mode&^DeletionConfirmed != 0 || v.MTime != 0 || v.Size != 0 || v.Hash != zero || len(v.Chunks) > 0 || len(v.Inline) > 0 || v.Target != "" {
			return bad("has a mode, mtime, size, hash or content")
		}
		return nil
	}
	return fmt.Errorf("%w: %q: unknown kind %d", ErrBadVersion, v.Path, uint8(v.Kind))
}

// encodeBody returns the canonical plaintext encoding of b. b must be valid.
// A body with an author name is [versions, name] (format 3), one without
// is [versions].
func encodeBody(b *Body) []byte {
	versions := make([]wireVersion, len(b.Versions))
	for i := range b.Versions {
		v := &b.Versions[i]
		wv := &versions[i]
		*wv = wireVersion{
			Path: v.Path, Kind: uint8(v.Kind), Mode: v.Mode, MTime: v.MTime, Size: v.Size,
			Supersedes: toWireIDs(v.Supersedes), Hash: v.Hash[:], Inline: v.Inline, Target: v.Target,
		}
		if len(v.Chunks) > 0 {
			wv.Chunks = make([]wireChunkRef, len(v.Chunks))
			for j, c := range v.Chunks {
				wv.Chunks[j] = wireChunkRef{CID: c.CID.Bytes(), Size: c.Size}
			}
		}
	}
	if b.Author != "" {
		return marshal(&wireNamedBody{Versions: versions, Author: b.Author})
	}
	return marshal(&wireBody{Versions: versions})
}

// decodeBody parses a body plaintext: CBOR with limits, canonical form,
// CIDs. The caller then validates it against its entry.
func decodeBody(plain []byte) (*Body, error) { return decodeBodyForm(plain, true) }

// decodeBodyForm is decodeBody, with the canonical-form check only when
// canonical is set (OpenStoredBody clears it).
func decodeBodyForm(plain []byte, canonical bool) (*Body, error) {
	var w wireBody
	var author string
	if len(plain) > 0 && plain[0] == 0x82 { // an array of two: [versions, name] (format 3)
		var nw wireNamedBody
		if err := unmarshal(plain, &nw); err != nil {
			return nil, err
		}
		if canonical && !isCanonical(&nw, plain) {
			return nil, ErrNonCanonical
		}
		if err := member.CheckName(nw.Author); err != nil {
			return nil, fmt.Errorf("%w: the author's name: %w", ErrMalformed, err)
		}
		w.Versions, author = nw.Versions, nw.Author
	} else {
		if err := unmarshal(plain, &w); err != nil {
			return nil, err
		}
		if canonical && !isCanonical(&w, plain) {
			return nil, ErrNonCanonical
		}
	}
	if len(w.Versions) > MaxVersions {
		return nil, fmt.Errorf("%d versions, limit %d: %w", len(w.Versions), MaxVersions, ErrTooManyVersions)
	}
	b := &Body{Author: author}
	if len(w.Versions) > 0 {
		b.Versions = make([]Version, len(w.Versions))
	}
	for i := range w.Versions {
		wv := &w.Versions[i]
		v := &b.Versions[i]
		if len(wv.Hash) != len(v.Hash) {
			return nil, fmt.Errorf("%w: version %d: hash of %d bytes", ErrMalformed, i, len(wv.Hash))
		}
		sup, err := fromWireIDs(wv.Supersedes)
		if err != nil {
			return nil, fmt.Errorf("version %d: %w", i, err)
		}
		*v = Version{
			Path: wv.Path, Kind: Kind(wv.Kind), Mode: wv.Mode, MTime: wv.MTime, Size: wv.Size,
			Supersedes: sup, Hash: [32]byte(wv.Hash), Target: wv.Target,
		}
		if len(wv.Inline) > 0 {
			v.Inline = wv.Inline
		}
		if len(wv.Chunks) > 0 {
			v.Chunks = make([]ChunkRef, len(wv.Chunks))
			prefix := chunkCIDPrefix // or pieces, all of them (piece.go)
			if bytes.HasPrefix(wv.Chunks[0].CID, pieceCIDPrefix) {
				prefix = pieceCIDPrefix
			}
			for j, c := range wv.Chunks {
				id, err := parseCID(c.CID, prefix)
				if err != nil {
					return nil, fmt.Errorf("version %d chunk %d: %w", i, j, err)
				}
				v.Chunks[j] = ChunkRef{CID: id, Size: c.Size}
			}
		}
	}
	return b, nil
}

// matchHeaders checks that hs is exactly the public shadow of b.
func matchHeaders(hs []VersionHeader, b *Body) error {
	if len(hs) != len(b.Versions) {
		return fmt.Errorf("%w: %d headers, %d versions", ErrHeaderMismatch, len(hs), len(b.Versions))
	}
	for i := range hs {
		v := &b.Versions[i]
		h := &hs[i]
		if len(h.Refs) != len(v.Chunks) {
			return fmt.Errorf("%w: version %d: %d refs, %d chunks", ErrHeaderMismatch, i, len(h.Refs), len(v.Chunks))
		}
		for j := range h.Refs {
			if !h.Refs[j].Equals(v.Chunks[j].CID) {
				return fmt.Errorf("%w: version %d ref %d", ErrHeaderMismatch, i, j)
			}
		}
		if len(h.Supersedes) != len(v.Supersedes) {
			return fmt.Errorf("%w: version %d: supersedes %d in header, %d in body", ErrHeaderMismatch, i, len(h.Supersedes), len(v.Supersedes))
		}
		for j := range h.Supersedes {
			if h.Supersedes[j] != v.Supersedes[j] {
				return fmt.Errorf("%w: version %d supersedes %d", ErrHeaderMismatch, i, j)
			}
		}
	}
	return nil
}
