package pack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// Budget is the share of time a background job may work: at most Work in
// every Per. {Work: time.Minute, Per: time.Hour} lets the scrub read for one
// minute in each hour.
type Budget struct {
	Work time.Duration
	Per  time.Duration
}

// DefaultScrubBudget is one minute of scrubbing per hour.
var DefaultScrubBudget = Budget{Work: time.Minute, Per: time.Hour}

// Pause returns how long to rest after a step that took worked, so that
// work stays at Work/Per of wall time: worked × (Per−Work)/Work. A budget
// with Work >= Per never pauses; one with Work <= 0 pauses a whole Per. A
// pause too long for a Duration saturates.
// Pause is pure.
func (b Budget) Pause(worked time.Duration) time.Duration {
	switch {
	case b.Work >= b.Per:
		return 0
	case b.Work <= 0:
		return b.Per
	case worked <= 0:
		return 0
	}
	p := float64(worked) * float64(b.Per-b.Work) / float64(b.Work)
	if p >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(p)
}

// ScrubStepResult reports one step of the scrub.
type ScrubStepResult struct {
	Checked  int       // chunks read and verified
	Bytes    int64     // their record bytes
	Corrupt  []cid.Cid // chunks found corrupt and dropped from the index
	PassDone bool      // the step reached the end of the index
}

// ScrubStep re-verifies chunks in index order, starting after where the
// previous step stopped (a cursor kept in the index, so a pass survives
// restarts), until it has read maxBytes or reached the end of the index. A
// chunk whose record or hash is bad is quarantined: dropped from the index
// so that the next Put of it (a fetch from a peer) stores it again. At the
// end of the index the time of the finished pass is recorded (LastScrub)
// and the next step starts from the beginning. IO errors other than
// corruption stop the step and are returned; nothing is dropped for them.
func (s *Store) ScrubStep(maxBytes int64) (ScrubStepResult, error) {
	var res ScrubStepResult
	if s.closed.Load() {
		return res, ErrClosed
	}
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	if err := s.healNow(); err != nil {
		return res, err
	}
	s.imu.RLock()
	defer s.imu.RUnlock()
	start, err := s.db.Get(keyScrubCursor, nil)
	if err != nil && !errors.Is(err, leveldb.ErrNotFound) {
		return res, fmt.Errorf("reading scrub cursor: %w", err)
	}
	rng := util.BytesPrefix([]byte{prefixChunk})
	if len(start) > 0 {
		rng.Start = append(bytes.Clone(start), 0) // just after the cursor
	}
	it := s.db.NewIterator(rng, nil)
	var last []byte
	var bad [][2][]byte
	for res.Bytes < maxBytes && it.Next() {
		err = nil
		key, val := bytes.Clone(it.Key()), bytes.Clone(it.Value())
		last = key
		l, derr := decodeLoc(val)
		c, cerr := cid.Cast(key[1:])
		var data []byte
		if derr == nil && cerr == nil {
			s.rmu.RLock()
			data, err = s.readAt(l, key[1:])
			s.rmu.RUnlock()
			if err != nil && !isCorrupt(err) {
				it.Release()
				return res, err
			}
			res.Bytes += l.length
		}
		res.Checked++
		if derr != nil || cerr != nil || err != nil || !verifyChunk(c, data) {
			bad = append(bad, [2][]byte{key, val})
			if cerr == nil {
				res.Corrupt = append(res.Corrupt, c)
			}
		}
	}
	res.PassDone = !it.Next()
	it.Release()
	if err := it.Error(); err != nil {
		return res, fmt.Errorf("reading chunk index: %w", err)
	}
	if len(bad) > 0 {
		n, _, err := s.dropEntries(bad)
		if err != nil {
			return res, err
		}
		s.corrupt.Add(uint64(n))
		s.cfg.Logger.Error("scrub quarantined corrupt chunks", "count", n)
	}
	b := new(leveldb.Batch)
	if res.PassDone {
		b.Delete(keyScrubCursor)
		b.Put(keyScrubLast, encodeUint64(uint64(s.cfg.Now().UnixNano())))
	} else if last != nil {
		b.Put(keyScrubCursor, last)
	}
	if err := s.write(b, syncWrite); err != nil {
		return res, fmt.Errorf("writing scrub cursor: %w", err)
	}
	return res, nil
}

// LastScrub returns when the last full scrub pass ended, and false if none
// has.
func (s *Store) LastScrub() (time.Time, bool, error) {
	s.imu.RLock()
	v, err := s.db.Get(keyScrubLast, nil)
	s.imu.RUnlock()
	if errors.Is(err, leveldb.ErrNotFound) {
		return time.Time{}, false, nil
	}
	if err != nil || len(v) != 8 {
		return time.Time{}, false, fmt.Errorf("reading last scrub time: %w", errors.Join(err, ErrCorrupt))
	}
	return time.Unix(0, int64(beUint64(v))), true, nil
}

// Clock is the time source of Scrub; tests inject a fake.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// ScrubConfig configures Scrub.
type ScrubConfig struct {
	// Budget bounds the time spent verifying; zero means
	// DefaultScrubBudget.
	Budget Budget
	// StepBytes is how much one step reads; zero means 16 MiB.
	StepBytes int64
	// Clock measures steps and paces them; nil means the real clock.
	Clock Clock
	// OnCorrupt, if set, is called with each chunk the scrub quarantines.
	OnCorrupt func(cid.Cid)
}

// Scrub runs ScrubStep over and over, resting between steps so that it
// works at most Budget.Work per Budget.Per, until ctx is done (it then
// returns ctx.Err()) or a step fails (it returns that error). An empty
// store is checked again after a whole Per.
func (s *Store) Scrub(ctx context.Context, cfg ScrubConfig) error {
	if cfg.Budget == (Budget{}) {
		cfg.Budget = DefaultScrubBudget
	}
	if cfg.StepBytes <= 0 {
		cfg.StepBytes = 16 << 20
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		t0 := cfg.Clock.Now()
		res, err := s.ScrubStep(cfg.StepBytes)
		if err != nil {
			return err
		}
		if cfg.OnCorrupt != nil {
			for _, c := range res.Corrupt {
				cfg.OnCorrupt(c)
			}
		}
		pause := cfg.Budget.Pause(cfg.Clock.Now().Sub(t0))
		if res.Checked == 0 {
			pause = cfg.Budget.Per
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-cfg.Clock.After(pause):
		}
	}
}
