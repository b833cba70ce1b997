package observe

import (
	"sync"
	"time"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/keys"
)

// ScanNotes is what the last scans of each folder could not take. Its
// methods are safe for concurrent use.
type ScanNotes struct {
	mu    sync.Mutex
	notes map[string]*scanNote // by folder
}

// scanNote is what the last scans of a folder could not take.
type scanNote struct {
	skipped        map[string]string    // path -> why, from the last scan covering it
	unsettled      map[string]time.Time // path -> when it was last found changing
	watcherRescans int
	watcherFailed  string
}

func (s *ScanNotes) noteLocked(folder string) *scanNote {
	if s.notes == nil {
		s.notes = map[string]*scanNote{}
	}
	n, ok := s.notes[folder]
	if !ok {
		n = &scanNote{skipped: map[string]string{}, unsettled: map[string]time.Time{}}
		s.notes[folder] = n
	}
	return n
}

// Scanned records what a scan of folder's paths (nil: the whole folder)
// could not take, at now, replacing what earlier scans said about the
// same paths.
func (s *ScanNotes) Scanned(folderPath string, paths []string, res folder.Result, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.noteLocked(folderPath)
	covered := func(p string) bool {
		if paths == nil {
			return true
		}
		for _, q := range paths {
			if q == "" || p == q || len(p) > len(q) && p[:len(q)] == q && p[len(q)] == '/' {
				return true
			}
		}
		return false
	}
	for p := range n.skipped {
		if covered(p) {
			delete(n.skipped, p)
		}
	}
	for p := range n.unsettled {
		if covered(p) {
			delete(n.unsettled, p)
		}
	}
	for _, sk := range res.Skipped {
		n.skipped[sk.Path] = sk.Err.Error()
	}
	for _, p := range res.Unsettled {
		n.unsettled[p] = now
	}
}

// WatcherRescan counts a full rescan the folder's watcher asked for after
// it lost events.
func (s *ScanNotes) WatcherRescan(folder string) {
	s.mu.Lock()
	s.noteLocked(folder).watcherRescans++
	s.mu.Unlock()
}

// WatcherFailed records why the folder's watcher could not run ("": it
// runs again).
func (s *ScanNotes) WatcherFailed(folder, why string) {
	s.mu.Lock()
	s.noteLocked(folder).watcherFailed = why
	s.mu.Unlock()
}

// Problems returns copies of what scans of folder skipped (path -> why)
// and found unsettled, the watcher's rescans and why it failed.
func (s *ScanNotes) Problems(folder string) (skipped map[string]string, unsettled []string, rescans int, watcherFailed string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.noteLocked(folder)
	skipped = make(map[string]string, len(n.skipped))
	for p, r := range n.skipped {
		skipped[p] = r
	}
	for p := range n.unsettled {
		unsettled = append(unsettled, p)
	}
	return skipped, unsettled, n.watcherRescans, n.watcherFailed
}

// Rates keeps every peer's byte counters over the last minute. Its
// methods are safe for concurrent use.
type Rates struct {
	mu      sync.Mutex
	samples []sample // newest last, at most MaxSamples
}

// sample is every peer's byte counters at one time.
type sample struct {
	at         time.Time
	sent, recv map[keys.DeviceID]int64
}

// MaxSamples is how many samples Rates keeps: one minute at SampleEvery.
const (
	MaxSamples  = 13
	SampleEvery = 5 * time.Second
)

// Add records every peer's bytes sent and received so far, at at.
func (r *Rates) Add(at time.Time, sent, recv map[keys.DeviceID]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, sample{at: at, sent: sent, recv: recv})
	if len(r.samples) > MaxSamples {
		r.samples = r.samples[len(r.samples)-MaxSamples:]
	}
}

// Throughput is peer d's bytes per second sent and received over the
// samples kept (the last minute, or since the first sample), and the time
// they span (0: not enough samples).
func (r *Rates) Throughput(d keys.DeviceID) (sent, recv float64, over time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.samples) < 2 {
		return 0, 0, 0
	}
	a, b := r.samples[0], r.samples[len(r.samples)-1]
	over = b.at.Sub(a.at)
	if over <= 0 {
		return 0, 0, 0
	}
	return float64(b.sent[d]-a.sent[d]) / over.Seconds(), float64(b.recv[d]-a.recv[d]) / over.Seconds(), over
}
