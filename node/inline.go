package node

import (
	"fmt"

	"github.com/weftsync/weft/node/logview"
	"github.com/weftsync/weft/protocol"
	"github.com/weftsync/weft/protocol/entry"
)

// Inline contents live in the view's cache (node/logview); withInline
// reads a version's back from the log when the cache no longer holds it.

// withInline returns ver (the body of version id, as the view's bodies hold it)
// with its inline bytes, from the cache or else from the log. v.mu must
// not be held: a miss reads and decrypts the version's entry.
func (v *vault) withInline(id protocol.VersionID, ver entry.Version) (entry.Version, error) {
	if !logview.IsInline(ver) || len(ver.Inline) > 0 {
		return ver, nil
	}
	if b, ok := v.view.Inline.Get(id); ok {
		ver.Inline = b
		return ver, nil
	}
	v.view.Inline.Reads.Add(1)
	e, err := v.db.Get(id.Author, id.Seq)
	if err != nil {
		return ver, fmt.Errorf("reading the entry of %s for its content: %w", ver.Path, err)
	}
	body, err := v.crypt.OpenStoredBody(e)
	if err != nil {
		return ver, fmt.Errorf("reading the entry of %s for its content: %w", ver.Path, err)
	}
	if int(id.Index) >= len(body.Versions) {
		return ver, fmt.Errorf("reading the entry of %s: version %d of %d", ver.Path, id.Index, len(body.Versions))
	}
	for i, bv := range body.Versions {
		v.view.Inline.Put(e.VersionID(i), bv.Inline)
	}
	// Only the content is compared: a caller may have renamed ver (a
	// conflict copy is written under another name than its version's),
	// and the ID names one version of one entry.
	got := body.Versions[id.Index]
	if got.Hash != ver.Hash || got.Size != ver.Size {
		return ver, fmt.Errorf("reading the entry of %s: the log holds another version there", ver.Path)
	}
	ver.Inline = got.Inline
	return ver, nil
}
