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
	"github.com/weftsync/weft/store/chunkstore"
)

// Budget is the share of time a background job may work: at most Work in
// every Per. {Work: time.Minute, Per: time.Hour} lets the scrub read for one
// minute in each hour.
type Budget struct {
	Work time.Duration
	Per  time.Duration
}

// DefaultScrubBudget is one minute of scrubbing per hour: the most the
// scrub may work, whatever the store's size. docs/benchmarks.md has what it
// costs (BenchmarkScrub): a scrub step is one core reading and hashing, so
// the budget bounds its share of one core and of the disk's time alike.
var DefaultScrubBudget = Budget{Work: time.Minute, Per: time.Hour}

// DefaultScrubPeriod is how often the scrub means to re-verify every
// chunk: once a week. A store small enough to be read faster is read no
// faster than that (the scrub spreads a pass over the period, so a small
// relay spends next to nothing on it); one too large for the budget takes
// longer, at the budget.
const DefaultScrubPeriod = 7 * 24 * time.Hour

// ScrubPace is how a background scrub spreads its work: a whole pass in
// about Period, never more than Budget.
type ScrubPace struct {
	Budget Budget        // zero means DefaultScrubBudget
	Period time.Duration // zero means DefaultScrubPeriod; negative: the budget alone
}

func (p ScrubPace) withDefaults() ScrubPace {
	if p.Budget == (Budget{}) {
		p.Budget = DefaultScrubBudget
	}
	if p.Period == 0 {
		p.Period = DefaultScrubPeriod
	}
	return p
}

// Pause returns how long to rest after a step that verified stepBytes in
// worked, when the stores being scrubbed hold totalBytes: long enough that
// the pass reads at totalBytes/Period (the step's share of the period,
// less the time it took), and at least what the budget asks
// (Budget.Pause). A step that verified nothing, or a store that holds
// nothing, rests a whole budget period: there is nothing to pace by. Pause
// is pure.
func (p ScrubPace) Pause(worked time.Duration, stepBytes, totalBytes int64) time.Duration {
	p = p.withDefaults()
	if stepBytes <= 0 || totalBytes <= 0 {
		return p.Budget.Per
	}
	pause := p.Budget.Pause(worked)
	if p.Period < 0 {
		return pause
	}
	share := float64(p.Period) * float64(min(stepBytes, totalBytes)) / float64(totalBytes)
	if rest := share - float64(worked); rest > float64(pause) {
		if rest >= math.MaxInt64 {
			return math.MaxInt64
		}
		pause = time.Duration(rest)
	}
	return pause
}

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
type ScrubStepResult = chunkstore.ScrubStepResult

// ScrubStep re-verifies chunks in index order, starting after where the
// previous step stopped (a cursor kept in the index, so a pass survives
// restarts), until it has read maxBytes or reached the end of the index. A
// chunk whose record or hash is bad is quarantined (see quarantine.go):
// dropped from the index, so that Has and Get no longer report it and the
// next Put of it (a fetch from a peer) stores it again. At the end of the
// index the time of the finished pass is recorded (LastScrub) and the next
// step starts from the beginning. IO errors other than corruption stop the
// step and are returned; nothing is dropped for them.
func (s *Store) ScrubStep(maxBytes int64) (ScrubStepResult, error) {
	var res ScrubStepResult
	if s.closed.Load() {
		return res, ErrClosed
	}
	var found []cid.Cid
	defer func() { s.reportQuarantined(found, FoundByScrub) }() // after gcMu is released
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
		if derr != nil || cerr != nil || err != nil || !chunkstore.Verify(c, data) {
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
	s.scrubChunks.Add(uint64(res.Checked))
	s.scrubBytes.Add(uint64(res.Bytes))
	if len(bad) > 0 {
		dropped, err := s.quarantineEntries(bad)
		if err != nil {
			return res, err
		}
		// Report only what this step dropped: a chunk a read quarantined
		// or a Put replaced meanwhile is not this step's to report.
		found, res.Corrupt = dropped, dropped
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
	if s.closed.Load() {
		return time.Time{}, false, ErrClosed
	}
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
	// Period is how long a whole pass should take (ScrubPace); zero means
	// DefaultScrubPeriod, negative paces by the budget alone.
	Period time.Duration
	// StepBytes is how much one step reads; zero means DefaultScrubStep.
	StepBytes int64
	// Clock measures steps and paces them; nil means the real clock.
	Clock Clock
	// OnCorrupt, if set, is called with each chunk the scrub quarantines
	// (Config.OnQuarantine hears of it too).
	OnCorrupt func(cid.Cid)
}

// DefaultScrubStep is how much one scrub step reads.
const DefaultScrubStep = chunkstore.DefaultScrubStep

// Scrub runs ScrubStep over and over, resting between steps as ScrubPace
// says (a pass in about Period, at most Budget.Work per Budget.Per), until
// ctx is done (it then returns ctx.Err()) or a step fails (it returns that
// error). An empty store is checked again after a whole Budget.Per.
func (s *Store) Scrub(ctx context.Context, cfg ScrubConfig) error {
	if cfg.StepBytes <= 0 {
		cfg.StepBytes = DefaultScrubStep
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	pace := ScrubPace{Budget: cfg.Budget, Period: cfg.Period}
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
		pause := pace.Pause(cfg.Clock.Now().Sub(t0), res.Bytes, s.Stats().BytesStored)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-cfg.Clock.After(pause):
		}
	}
}

// ScrubPass verifies every chunk now, without pausing: it restarts the
// pass at the start of the index and runs steps of stepBytes (zero means
// DefaultScrubStep) until the end, as an operator's "scrub now" wants. It
// returns the steps' totals (PassDone set once it got to the end) and
// stops early, with what it did so far, when ctx ends or a step fails.
// Steps of a background Scrub that run meanwhile share the cursor, so the
// chunks they verify count for them, not here.
func (s *Store) ScrubPass(ctx context.Context, stepBytes int64) (ScrubStepResult, error) {
	if err := s.restartScrub(); err != nil {
		return ScrubStepResult{}, err
	}
	return chunkstore.ScrubSteps(ctx, stepBytes, s.ScrubStep)
}

// restartScrub moves the scrub cursor back to the start of the index.
func (s *Store) restartScrub() error {
	if s.closed.Load() {
		return ErrClosed
	}
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	if err := s.healNow(); err != nil {
		return err
	}
	s.imu.RLock()
	defer s.imu.RUnlock()
	b := new(leveldb.Batch)
	b.Delete(keyScrubCursor)
	if err := s.write(b, syncWrite); err != nil {
		return fmt.Errorf("writing scrub cursor: %w", err)
	}
	return nil
}
