package observe

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/protocol/keys"
)

func TestScanNotesKeepWhatLaterScansDidNotCover(t *testing.T) {
	var s ScanNotes
	t0 := time.Unix(1_800_000_000, 0)
	s.Scanned("/f", nil, folder.Result{
		Skipped:   []folder.Skip{{Path: "a/x", Err: errors.New("permission denied")}, {Path: "b/y", Err: errors.New("bad name")}},
		Unsettled: []string{"a/busy", "c"},
	}, t0)
	// A scan of a/ alone finds a/x readable now: b/y and c stand.
	s.Scanned("/f", []string{"a"}, folder.Result{}, t0.Add(time.Minute))
	skipped, unsettled, _, _ := s.Problems("/f")
	if len(skipped) != 1 || skipped["b/y"] != "bad name" {
		t.Fatalf("skipped %v, want only b/y", skipped)
	}
	if slices.Sort(unsettled); !slices.Equal(unsettled, []string{"c"}) {
		t.Fatalf("unsettled %v, want [c]", unsettled)
	}
	// "ab" is not under "a".
	s.Scanned("/f", nil, folder.Result{Skipped: []folder.Skip{{Path: "ab", Err: errors.New("e")}}}, t0)
	s.Scanned("/f", []string{"a"}, folder.Result{}, t0)
	if skipped, _, _, _ := s.Problems("/f"); skipped["ab"] == "" {
		t.Fatal("a scan of a/ cleared ab")
	}
	// Folders are apart; the watcher's notes too.
	s.WatcherRescan("/g")
	s.WatcherRescan("/g")
	s.WatcherFailed("/g", "too many open files")
	if sk, _, rescans, failed := s.Problems("/g"); len(sk) != 0 || rescans != 2 || failed != "too many open files" {
		t.Fatalf("/g: %v, %d rescans, failed %q", sk, rescans, failed)
	}
	s.WatcherFailed("/g", "")
	if _, _, _, failed := s.Problems("/g"); failed != "" {
		t.Fatalf("watcher failure %q after it runs again", failed)
	}
}

func TestRatesOverTheLastMinute(t *testing.T) {
	var r Rates
	d := keys.DeviceID{1}
	t0 := time.Unix(1_800_000_000, 0)
	if _, _, over := r.Throughput(d); over != 0 {
		t.Fatal("a rate from no samples")
	}
	for i := range 20 { // 100 s of samples, 1,000 bytes a second sent, 10 received
		at := t0.Add(time.Duration(i) * SampleEvery)
		sec := int64(i) * int64(SampleEvery/time.Second)
		r.Add(at, map[keys.DeviceID]int64{d: 1000 * sec}, map[keys.DeviceID]int64{d: 10 * sec})
	}
	sent, recv, over := r.Throughput(d)
	if over != (MaxSamples-1)*SampleEvery || sent != 1000 || recv != 10 {
		t.Fatalf("sent %v recv %v over %v, want 1000/s and 10/s over the last %v", sent, recv, over, (MaxSamples-1)*SampleEvery)
	}
	if s, _, _ := r.Throughput(keys.DeviceID{2}); s != 0 {
		t.Fatalf("an unknown peer sent %v/s", s)
	}
}
