package api

import (
	"strings"
	"testing"
)

// metricsSource is a MetricsSource with fixed answers.
type metricsSource struct{}

func (metricsSource) Status() Status {
	return Status{
		Folders: []FolderStatus{{Path: "/f", State: "syncing", Files: 7, PendingApply: 2, Errors: []PathMessage{{Code: CodeCorrupt, Path: "a"}}}},
		Peers:   []PeerStatus{{ID: "peerA", Connection: "lan", InSync: true, BytesSent: 10}},
	}
}

func (metricsSource) FolderGauges() map[string]FolderGauges {
	return map[string]FolderGauges{"/f": {Dirs: 3, Unwatched: -1}}
}
func (metricsSource) Counters() Counters       { return Counters{ChunksServed: 5} }
func (metricsSource) Versions() []VersionsInfo { return []VersionsInfo{{Folder: "/f", Versions: 4}} }

// TestMetricsReadTheSource: gauges come from the source at scrape time,
// counters from the events counted, each under its documented name.
func TestMetricsReadTheSource(t *testing.T) {
	mt := NewMetrics(metricsSource{})
	mt.Count(Event{Type: EventEntryWritten, Folder: "/f", Count: 3})
	mt.Count(Event{Type: EventError, Folder: "/f"})
	mt.CountSafe("/f", 2)
	fams, err := mt.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			got[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	want := map[string]float64{
		"weft_folder_files{folder=/f}":                    7,
		"weft_folder_directories{folder=/f}":              3,
		"weft_watcher_unwatched_directories{folder=/f}":   -1,
		"weft_folder_pending{folder=/f,kind=apply}":       2,
		"weft_folder_error_codes{code=corrupt,folder=/f}": 1,
		"weft_folder_state{folder=/f,state=syncing}":      1,
		"weft_folder_state{folder=/f,state=in-sync}":      0,
		"weft_peer_connected{connection=lan,peer=peerA}":  1,
		"weft_peer_in_sync{peer=peerA}":                   1,
		"weft_peer_sent_bytes_total{peer=peerA}":          10,
		"weft_chunks_served_total{}":                      5,
		"weft_versions_kept{folder=/f}":                   4,
		"weft_entries_written_total{folder=/f}":           1,
		"weft_versions_written_total{folder=/f}":          3,
		"weft_errors_total{folder=/f,kind=apply}":         1,
		"weft_entries_safe_total{folder=/f}":              2,
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s: got %v (present %v), want %v", k, g, ok, w)
		}
	}
}
