package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/syndtr/goleveldb/leveldb"

	"github.com/weftsync/weft/store/chunkrec"
	"github.com/weftsync/weft/store/chunkstore"
)

// listed is an object found under the prefix.
type listed struct {
	name string
	size int64
}

// list lists the objects under the store's prefix by sequence number.
// Names that are not the store's are left alone.
func (s *Store) list(ctx context.Context) (map[uint64]listed, error) {
	out := map[uint64]listed{}
	pfx := s.key("")
	s.req.list.Add(1)
	n := 0
	for oi := range s.cfg.Client.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: pfx, Recursive: true}) {
		if oi.Err != nil {
			return nil, fmt.Errorf("listing objects under %s: %w", pfx, oi.Err)
		}
		if n++; n%1000 == 0 {
			s.req.list.Add(1) // a page holds at most 1,000
		}
		name := strings.TrimPrefix(oi.Key, pfx)
		seq, ok := seqOf(name)
		if !ok {
			s.cfg.Logger.Warn("object under the chunk prefix that is not a chunk object; left alone", "key", oi.Key)
			continue
		}
		out[seq] = listed{name: name, size: oi.Size}
	}
	return out, nil
}

// reconcile brings the index in line with the objects: objects it does
// not know are indexed (newest first, so that the newest copy of a chunk a
// GC moved is the one used), objects that are gone or altered are
// forgotten (altered ones then indexed again from what they hold), retired
// objects past their grace are deleted, and the counters are set.
func (s *Store) reconcile() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*s.cfg.Timeout)
	defer cancel()
	found, err := s.list(ctx)
	if err != nil {
		return err
	}
	known, err := s.objects()
	if err != nil {
		return err
	}
	var maxSeq uint64
	lost := 0
	for _, k := range known {
		maxSeq = max(maxSeq, k.seq)
		l, ok := found[k.seq]
		if ok && l.name == k.name && l.size == k.size {
			delete(found, k.seq)
			continue
		}
		gone := s.forgetObject(k.seq, chunkstore.FoundByOpen)
		lost += len(gone)
		if ok {
			s.cfg.Logger.Warn("chunk object altered; indexing it again", "object", k.name, "size", l.size, "indexed_size", k.size)
		} else if k.retired == 0 {
			s.cfg.Logger.Warn("chunk object gone; its chunks are fetched again", "object", k.name, "chunks", len(gone))
		}
	}
	seqs := make([]uint64, 0, len(found))
	for seq := range found {
		seqs = append(seqs, seq)
		maxSeq = max(maxSeq, seq)
	}
	slices.Sort(seqs)
	slices.Reverse(seqs)
	indexed := 0
	for _, seq := range seqs {
		n, err := s.indexObject(seq, found[seq])
		if err != nil {
			return err
		}
		indexed += n
	}
	if len(seqs) > 0 || lost > 0 {
		s.cfg.Logger.Info("chunk index reconciled with the objects", "objects_indexed", len(seqs), "chunks_indexed", indexed, "chunks_lost", lost)
	}
	s.nextSeq.Store(maxSeq + 1)
	if err := s.recount(); err != nil {
		return err
	}
	return s.deleteRetired(ctx)
}

// indexObject reads object l and indexes the records in it whose chunks
// the index does not hold. An object with no record at all is indexed as
// empty, so that GC deletes it.
func (s *Store) indexObject(seq uint64, l listed) (int, error) {
	data, err := s.readObject(l.name)
	if isNoSuchKey(err) {
		return 0, nil // deleted since it was listed
	}
	if err != nil {
		// Unreadable now (archived, a bad minute): left for the next
		// Open; its chunks are wanted again meanwhile.
		s.cfg.Logger.Warn("chunk object unreadable; not indexed", "object", l.name, "err", err)
		return 0, nil
	}
	b := new(leveldb.Batch)
	added := map[string]bool{}
	now := s.cfg.Now().Unix()
	_, err = chunkrec.Scan(bytes.NewReader(data), 0, int64(len(data)), func(off int64, cb, chunk []byte) error {
		if added[string(cb)] {
			return nil
		}
		_, _, err := s.lookup(cb)
		if err == nil {
			return nil
		}
		if !errors.Is(err, chunkstore.ErrNotFound) {
			return err
		}
		added[string(cb)] = true
		b.Put(chunkKey(cb), loc{seq: seq, off: off, length: chunkrec.Size(len(cb), len(chunk)), stored: now}.encode())
		b.Put(recordKey(seq, off), append([]byte(nil), cb...))
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("indexing object %s: %w", l.name, err)
	}
	b.Put(seqKey(prefixObject, seq), object{seq: seq, size: int64(len(data)), name: l.name}.encode())
	if err := s.db.Write(b, syncWrite); err != nil {
		return 0, fmt.Errorf("indexing object %s: %w", l.name, err)
	}
	return len(added), nil
}

// recount sets the totals from the index.
func (s *Store) recount() error {
	var chunks, stored, onDisk int64
	it := s.db.NewIterator(prefixRange(prefixChunk), nil)
	for it.Next() {
		if l, err := decodeLoc(it.Value()); err == nil {
			chunks++
			stored += dataLen(l.length, len(it.Key())-1)
		}
	}
	it.Release()
	if err := it.Error(); err != nil {
		return fmt.Errorf("reading chunk index: %w", err)
	}
	objs, err := s.objects()
	if err != nil {
		return err
	}
	for _, o := range objs {
		onDisk += o.size
	}
	s.chunks.Store(chunks)
	s.bytesStored.Store(stored)
	s.bytesOnDisk.Store(onDisk)
	return nil
}
