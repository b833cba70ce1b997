package s3store

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"

	"github.com/weftsync/weft/store/chunkrec"
	"github.com/weftsync/weft/store/chunkstore"
)

// loop gathers Puts into batches and starts an upload of each, at most
// Config.Uploads at once. It owns every upload goroutine (s.uploads);
// Close waits for them.
func (s *Store) loop() {
	defer close(s.loopDone)
	for {
		var first *putReq
		select {
		case first = <-s.reqs:
		case <-s.quit:
			return
		}
		// Wait for an upload slot before gathering: what queues while
		// every slot is busy joins this batch, so a slow server gets
		// fewer, larger objects.
		select {
		case s.slots <- struct{}{}:
		case <-s.quit:
			answer([]*putReq{first}, chunkstore.ErrClosed)
			return
		}
		batch := s.gather(first)
		seq := s.nextSeq.Add(1) - 1
		s.uploads.Go(func() {
			defer func() { <-s.slots }()
			answer(batch, s.upload(seq, batch))
		})
	}
}

// gather adds to first the requests that arrive until the batch reaches
// the object size, no request has come for CommitDelay, or 10 times
// CommitDelay have passed. Unlike a pack's fsync, a PUT costs money and
// tens of milliseconds, so a short linger that turns a stream of chunks
// into a few objects is worth the latency (a relay's Puts are never a
// user's wait).
func (s *Store) gather(first *putReq) []*putReq {
	batch := []*putReq{first}
	size := chunkrec.Size(len(first.c.Bytes()), len(first.data))
	if s.cfg.CommitDelay < 0 {
		return batch
	}
	idle := time.NewTimer(s.cfg.CommitDelay)
	defer idle.Stop()
	limit := time.After(10 * s.cfg.CommitDelay)
	for size < s.cfg.ObjectSize {
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
			size += chunkrec.Size(len(r.c.Bytes()), len(r.data))
			idle.Reset(s.cfg.CommitDelay)
			continue
		case <-idle.C:
		case <-limit:
		case <-s.quit:
		}
		break
	}
	return batch
}

func answer(batch []*putReq, err error) {
	for _, r := range batch {
		r.done <- err
	}
}

// upload writes batch as object seq and, once the PUT has succeeded,
// indexes it. A chunk put twice in one batch is written once.
func (s *Store) upload(seq uint64, batch []*putReq) error {
	var buf bytes.Buffer
	type placed struct {
		r   *putReq
		off int64
		n   int64
	}
	seen := make(map[string]int, len(batch)) // CID -> index in recs
	var recs []placed
	for _, r := range batch {
		cb := r.c.Bytes()
		if i, ok := seen[string(cb)]; ok {
			if recs[i].r.from != 0 && r.from == 0 {
				recs[i].r = r // a Put, not a relocation, decides the entry
			}
			continue
		}
		seen[string(cb)] = len(recs)
		off := int64(buf.Len())
		buf.Write(chunkrec.AppendHeader(nil, cb, r.data))
		buf.Write(r.data)
		recs = append(recs, placed{r, off, int64(buf.Len()) - off})
	}
	name := newName(seq)
	ctx, cancel := s.ctx()
	defer cancel()
	s.req.put.Add(1)
	size := int64(buf.Len())
	// A bytes.Reader, not the buffer: minio-go retries only a body it
	// can seek back (a 503 SlowDown is common on busy buckets).
	_, err := s.cfg.Client.PutObject(ctx, s.cfg.Bucket, s.key(name), bytes.NewReader(buf.Bytes()), size, minio.PutObjectOptions{
		ContentType: "application/octet-stream", DisableMultipart: true,
	})
	if err != nil {
		return fmt.Errorf("uploading object %s: %w", name, err)
	}
	s.objectsPut.Add(1)
	s.batches.Add(1)
	s.bytesOnDisk.Add(size)

	now := s.cfg.Now().Unix()
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	relocated := false
	b := new(leveldb.Batch)
	b.Put(seqKey(prefixObject, seq), object{seq: seq, size: size, name: name}.encode())
	for _, p := range recs {
		cb := p.r.c.Bytes()
		l := loc{seq: seq, off: p.off, length: p.n, stored: now}
		old, _, err := s.lookup(cb)
		switch {
		case err == nil && p.r.from != 0 && old.seq != p.r.from:
			continue // a relocation of a chunk dropped or moved meanwhile
		case err == nil:
			if p.r.from != 0 {
				l.stored = old.stored // its age, renewals included
				relocated = true
			}
			b.Delete(recordKey(old.seq, old.off))
		case errors.Is(err, chunkstore.ErrNotFound):
			if p.r.from != 0 {
				continue
			}
			s.chunks.Add(1)
			s.bytesStored.Add(int64(len(p.r.data)))
		default:
			return fmt.Errorf("indexing object %s: %w", name, err)
		}
		b.Put(chunkKey(cb), l.encode())
		b.Put(recordKey(seq, p.off), cb)
		s.appends.Add(1)
	}
	// Not synced: an object the index lost is indexed again at Open.
	// Relocations are: the old object's retirement, which is synced, must
	// not outlive the entries that moved out of it.
	wo := (*opt.WriteOptions)(nil)
	if relocated {
		wo = syncWrite
	}
	if err := s.db.Write(b, wo); err != nil {
		return fmt.Errorf("indexing object %s: %w", name, err)
	}
	return nil
}
