package vaultdb

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/weftsync/weft/protocol/keys"
)

var (
	syncWrite = &opt.WriteOptions{Sync: true}
	// indexOptions turn on every strict check goleveldb has, so a damaged
	// journal, manifest or table is an error at open or read, never a
	// silently shortened database.
	indexOptions = &opt.Options{Strict: opt.StrictAll, ErrorIfMissing: true, WriteBuffer: indexWriteBuffer}
	// readThrough is for reads through many keys at once (checkIndex and
	// IndexAll at open, Range for a replay or a peer's request): their
	// blocks are not read again soon, so they stay out of the block cache,
	// which they filled (8 MiB held at 100,000 files).
	readThrough = &opt.ReadOptions{DontFillCache: true}
)

// indexWriteBuffer is the index's write buffer: goleveldb allocates it
// whole at open (its memdb) and keeps it for as long as the index is open,
// so with goleveldb's default (4 MiB) it was the largest single item of an
// idle agent's live heap after B1's 10,000 notes, ahead of the version
// graph (docs/benchmarks.md, "Where an idle agent's live heap is"). B1
// writes about 1.2 MB to the index; a smaller buffer means more, smaller
// tables flushed, which goleveldb compacts in the background.
const indexWriteBuffer = 1 << 20

// openLevelDB opens a goleveldb directory. goleveldb keeps its own file IO,
// outside the FS seam; tests replace this to inject faults into it.
var openLevelDB = leveldb.OpenFile

// rebuildBatch is how many keys a rebuild writes per batch.
const rebuildBatch = 4096

// openIndex opens the index under dir/index and checks it against the
// verified logs, indexing entries it lacks. If the index is missing, fails
// to open, fails a checksum while it is read through, or contradicts the
// logs, it is moved aside and rebuilt. rep records what happened.
func openIndex(dir string, scan *logScan, rep *OpenReport) (*leveldb.DB, error) {
	path := filepath.Join(dir, "index")
	reason := ""
	var keep []keyValue
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		reason = "index missing"
		if scan.last == 0 {
			rep.Created = true
		}
	} else {
		idx, err := openLevelDB(path, indexOptions)
		if err != nil {
			reason = fmt.Sprintf("opening index: %v", err)
		} else {
			reason = checkIndex(idx, scan, rep)
			if reason == "" {
				return idx, nil
			}
			keep = keptMeta(idx)
			idx.Close()
		}
	}
	if !rep.Created {
		rep.Rebuilt, rep.RebuildReason = true, reason
	}
	rep.NeedRescan = true
	rep.Reindexed = 0
	return rebuildIndex(dir, scan, keep)
}

// keyValue is one index key and its value.
type keyValue struct{ k, v []byte }

// keptMeta returns the metadata ('m' keys) of an index that reads through
// but contradicts the logs (they lost entries it locates: OpenReport.Lost),
// for the rebuilt index to keep. Metadata is the node's own (where members
// were last reachable, the Lamport clock) and does not depend on the logs;
// losing it with the lost tail left a device that had lost its log tail
// unable to find the peers it must take that tail back from. An index that
// fails to read through keeps nothing.
func keptMeta(idx *leveldb.DB) []keyValue {
	var out []keyValue
	it := idx.NewIterator(prefixRange(pfxMeta), nil)
	defer it.Release()
	for it.Next() {
		out = append(out, keyValue{k: bytes.Clone(it.Key()), v: bytes.Clone(it.Value())})
	}
	if it.Error() != nil {
		return nil
	}
	return out
}

// checkIndex reads the whole index through (so every block's checksum is
// verified) and compares its log-derived keys with the scan. It returns
// why the index must be rebuilt, or "" after indexing the durable entries
// the index lacks (a crash between segment fsync and index batch).
func checkIndex(idx *leveldb.DB, scan *logScan, rep *OpenReport) string {
	for _, e := range scan.entries {
		e.seen, e.cseen = false, false
	}
	it := idx.NewIterator(nil, readThrough)
	defer it.Release()
	formatOK := false
	staleHeads := [][]byte{}
	goodHeads := 0
	// lost collects entries the index locates but the logs no longer
	// hold: an acknowledged log tail gone (a disk that lost written data,
	// or damage). The index is rebuilt; rep.Lost says what went missing.
	lost := map[keys.DeviceID][]uint64{}
	lostLoc, lostCID := map[entryKey]bool{}, map[entryKey]bool{}
	for it.Next() {
		k, v := it.Key(), it.Value()
		switch {
		case len(k) == 0:
			return "empty key in index"
		case bytes.Equal(k, formatKey):
			if len(v) != 1 || v[0] != indexFormat {
				return fmt.Sprintf("index format %x, want %d", v, indexFormat)
			}
			formatOK = true
		case k[0] == pfxLoc:
			ek, ok := parseLocKey(k)
			if !ok {
				return "malformed location key"
			}
			l, c, err := parseLocValue(v)
			info := scan.entries[ek]
			if err == nil && info == nil {
				lost[ek.author] = append(lost[ek.author], ek.seq)
				lostLoc[ek] = true
				continue
			}
			if err != nil || info.at != l || !info.cid.Equals(c) {
				return fmt.Sprintf("index locates %s seq %d where the logs disagree", ek.author.Short(), ek.seq)
			}
			info.seen = true
		case k[0] == pfxCID:
			ek, ok := parseCIDValue(v)
			info := scan.entries[ek]
			if ok && info == nil {
				lostCID[ek] = true // a lost entry, if its location key says so too
				continue
			}
			if !ok || !bytes.Equal(info.cid.Bytes(), k[1:]) {
				return "index names an entry CID the logs do not hold"
			}
			info.cseen = true
		case k[0] == pfxHead:
			var a keys.DeviceID
			copy(a[:], k[1:])
			if h, ok := scan.heads[a]; !ok || len(k) != 33 || !bytes.Equal(v, headValue(h)) {
				staleHeads = append(staleHeads, bytes.Clone(k))
			} else {
				goodHeads++
			}
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Sprintf("reading index: %v", err)
	}
	if !formatOK {
		return "index has no format key"
	}
	for ek := range lostCID {
		if !lostLoc[ek] {
			return "index names an entry CID the logs do not hold"
		}
	}
	if len(lost) > 0 {
		rep.Lost = lostGaps(lost)
		g := rep.Lost[0]
		return fmt.Sprintf("index locates %d entries the logs no longer hold (%s from seq %d)",
			len(lost[g.Author]), g.Author.Short(), g.Seq)
	}
	b := new(leveldb.Batch)
	for ek, info := range scan.entries {
		if !info.seen {
			rep.Reindexed++
			b.Put(locKey(ek.author, ek.seq), locValue(info.at, info.cid))
		}
		if !info.cseen {
			b.Put(cidKey(info.cid), cidValue(ek.author, ek.seq))
		}
	}
	if rep.Reindexed > 0 || len(staleHeads) > 0 || goodHeads != len(scan.heads) {
		for _, k := range staleHeads {
			b.Delete(k)
		}
		for a, h := range scan.heads {
			b.Put(headKey(a), headValue(h))
		}
	}
	if b.Len() > 0 {
		if err := idx.Write(b, syncWrite); err != nil {
			return fmt.Sprintf("writing index: %v", err)
		}
	}
	if rep.Reindexed > 0 {
		rep.NeedRescan = true
	}
	return ""
}

// lostGaps turns the sequence numbers of lost entries into one Gap per
// author (the lowest lost sequence, how many), sorted by author.
func lostGaps(lost map[keys.DeviceID][]uint64) []Gap {
	gaps := make([]Gap, 0, len(lost))
	for a, seqs := range lost {
		gaps = append(gaps, Gap{Author: a, Seq: slices.Min(seqs), Dropped: len(seqs)})
	}
	slices.SortFunc(gaps, func(x, y Gap) int { return bytes.Compare(x.Author[:], y.Author[:]) })
	return gaps
}

// rebuildIndex moves any index at dir/index aside to dir/index.old
// (replacing an older one), builds a new one from the scan in
// dir/index.new, and renames it into place. A crash at any point leaves
// either no dir/index (rebuilt again at the next Open) or a complete one.
func rebuildIndex(dir string, scan *logScan, keep []keyValue) (*leveldb.DB, error) {
	path := filepath.Join(dir, "index")
	tmp, old := path+".new", path+".old"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, fmt.Errorf("removing partial index: %w", err)
	}
	if _, err := os.Stat(path); err == nil {
		if err := os.RemoveAll(old); err != nil {
			return nil, fmt.Errorf("removing old index: %w", err)
		}
		if err := os.Rename(path, old); err != nil {
			return nil, fmt.Errorf("moving index aside: %w", err)
		}
		if err := syncDir(OSFS{}, dir); err != nil {
			return nil, fmt.Errorf("syncing %s: %w", dir, err)
		}
	}
	o := *indexOptions
	o.ErrorIfMissing = false
	idx, err := openLevelDB(tmp, &o)
	if err != nil {
		return nil, fmt.Errorf("creating index: %w", err)
	}
	if err := fillIndex(idx, scan, keep); err != nil {
		idx.Close()
		return nil, err
	}
	if err := idx.Close(); err != nil {
		return nil, fmt.Errorf("closing new index: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("renaming new index: %w", err)
	}
	if err := syncDir(OSFS{}, dir); err != nil {
		return nil, fmt.Errorf("syncing %s: %w", dir, err)
	}
	idx, err = openLevelDB(path, indexOptions)
	if err != nil {
		return nil, fmt.Errorf("opening rebuilt index: %w", err)
	}
	return idx, nil
}

// fillIndex writes the scan's locations, CIDs and heads and the kept
// metadata, then the format key, the last in a synced batch.
func fillIndex(idx *leveldb.DB, scan *logScan, keep []keyValue) error {
	b := new(leveldb.Batch)
	flush := func(wo *opt.WriteOptions) error {
		if err := idx.Write(b, wo); err != nil {
			return fmt.Errorf("writing rebuilt index: %w", err)
		}
		b.Reset()
		return nil
	}
	for ek, info := range scan.entries {
		b.Put(locKey(ek.author, ek.seq), locValue(info.at, info.cid))
		b.Put(cidKey(info.cid), cidValue(ek.author, ek.seq))
		if b.Len() >= rebuildBatch {
			if err := flush(nil); err != nil {
				return err
			}
		}
	}
	for a, h := range scan.heads {
		b.Put(headKey(a), headValue(h))
	}
	for _, kv := range keep {
		b.Put(kv.k, kv.v)
	}
	b.Put(formatKey, []byte{indexFormat})
	return flush(syncWrite)
}

// prefixRange is the key range of every key starting with p.
func prefixRange(p ...byte) *util.Range { return util.BytesPrefix(p) }
