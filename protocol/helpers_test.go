package protocol

import (
	"crypto/sha256"
	"time"

	"github.com/weftsync/weft/protocol/keys"
)

// t0 is a fixed time for test mtimes: 2026-11-30 05:46:57 UTC.
var t0 = time.Date(2026, 11, 30, 5, 46, 57, 0, time.UTC).UnixNano()

func dev(b byte) keys.DeviceID {
	var d keys.DeviceID
	for i := range d {
		d[i] = b
	}
	return d
}

func vid(author byte, seq uint64) VersionID { return VersionID{Author: dev(author), Seq: seq} }

func hashOf(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// fileV is a text file version of notes.md by author at seq, with Lamport
// clock clock, mtime and entry time t0+sec seconds, and the given content.
func fileV(author byte, seq, clock uint64, sec int64, content string, sup ...VersionID) Version {
	return Version{
		ID: vid(author, seq), Path: "notes.md", Kind: KindFile,
		ContentHash: hashOf(content), Size: uint64(len(content)), Mode: 0o644,
		MTime: t0 + sec*int64(time.Second), Time: (t0 + sec*int64(time.Second)) / 1e6,
		Clock: clock, Supersedes: sup, Text: true,
	}
}

func withKind(v Version, k Kind) Version {
	v.Kind = k
	if k == KindDir || k == KindDeletion {
		v.ContentHash, v.Size, v.Text = [32]byte{}, 0, false
	}
	if k == KindSymlink {
		v.Text = false
	}
	return v
}

func binary(v Version) Version { v.Text = false; return v }

func ids(vs []Version) []VersionID {
	out := make([]VersionID, len(vs))
	for i, v := range vs {
		out[i] = v.ID
	}
	return out
}
