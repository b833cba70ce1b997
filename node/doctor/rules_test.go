package doctor

import (
	"slices"
	"testing"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/folder"
)

func kinds(fs []api.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Severity+":"+f.Kind)
	}
	return out
}

func TestDiagnoseRules(t *testing.T) {
	ms := func(d time.Duration) *int64 { v := d.Milliseconds(); return &v }
	seen := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	const peerA = "12D3KooWAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	offline := api.PeerDiagnosis{ID: peerA, Connection: "offline", LastSeen: &seen, Addrs: []string{"/ip4/10.0.0.2/tcp/4001"}}
	online := api.PeerDiagnosis{ID: peerA, Connection: "lan", Reachable: true}
	folderOK := FolderFacts{FolderDiagnosis: api.FolderDiagnosis{Path: "/f", State: "in-sync"}, Shared: true, AnyPeer: true}
	with := func(mod func(*FolderFacts)) FolderFacts { f := folderOK; mod(&f); return f }
	pending := func(p PathFacts) func(*FolderFacts) {
		return func(f *FolderFacts) { f.Pending = []PathFacts{p}; f.PendingApply = 1; f.State = "syncing" }
	}
	chunked := PathFacts{PathState: PathState{Path: "big.bin", Dirty: true, Heads: 1, Chunks: 4}, Holders: []string{peerA}}
	tests := []struct {
		name  string
		facts Facts
		want  []string // severity:kind that must be present
		not   []string // that must be absent
	}{
		{"folder error codes", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) {
			f.State = "error"
			f.Coded = []api.PathMessage{
				{Code: api.CodeMarkerMissing, Reason: "marker gone"}, {Code: api.CodeMassDelete, Reason: "held"},
				{Code: api.CodeCorrupt, Path: "a.md", Reason: "damaged"}, {Code: api.CodeLogUnconfirmed, Reason: "waiting"},
			}
		})}, Peers: []api.PeerDiagnosis{online}},
			[]string{"problem:folder-marker-missing", "problem:mass-delete", "problem:corrupt", "warning:log-unconfirmed"}, []string{"info:in-sync"}},
		{"in sync", Facts{Folders: []FolderFacts{folderOK}, Peers: []api.PeerDiagnosis{online}},
			[]string{"info:in-sync", "info:peer-reachable"}, []string{"problem:peer-offline"}},
		{"peer stopped, nothing pending", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) { f.AnyPeer = false; f.State = "offline" })}, Peers: []api.PeerDiagnosis{offline}},
			[]string{"warning:peer-offline"}, []string{"problem:peer-offline"}},
		{"chunk whose only holder is offline", Facts{Folders: []FolderFacts{with(pending(func() PathFacts {
			p := chunked
			p.Err = "fetching: " + MsgChunkMissing + " (4 chunks): no member of the vault is connected"
			return p
		}()))}, Peers: []api.PeerDiagnosis{offline}},
			[]string{"problem:chunk-unavailable", "problem:peer-offline"}, []string{"info:in-sync"}},
		{"waiting for an offline peer before any error", Facts{Folders: []FolderFacts{with(pending(chunked))}, Peers: []api.PeerDiagnosis{offline}},
			[]string{"problem:peer-offline"}, nil},
		{"connected peer lost the chunks", Facts{Folders: []FolderFacts{with(pending(func() PathFacts {
			p := chunked
			p.Err = MsgChunkMissing + " (4 chunks)"
			return p
		}()))}, Peers: []api.PeerDiagnosis{online}},
			[]string{"warning:chunk-unavailable"}, []string{"problem:peer-offline"}},
		{"local edit", Facts{Folders: []FolderFacts{with(pending(PathFacts{PathState: PathState{Path: "n.md", Dirty: true, Heads: 1, Err: folder.ErrLocalChange.Error()}}))}},
			[]string{"info:local-edit"}, nil},
		{"disk full", Facts{Folders: []FolderFacts{with(pending(PathFacts{PathState: PathState{Path: "n.md", Heads: 1, Err: "write n.md: no space left on device"}}))}},
			[]string{"problem:disk-full"}, nil},
		{"permission", Facts{Folders: []FolderFacts{with(pending(PathFacts{PathState: PathState{Path: "n.md", Heads: 1, Err: "open n.md: permission denied"}}))}},
			[]string{"problem:permission"}, nil},
		{"unreadable file", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) { f.Skipped = map[string]string{"s.txt": "open s.txt: permission denied"} })}},
			[]string{"problem:unreadable"}, []string{"info:in-sync"}},
		{"file too large", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) {
			f.Skipped = map[string]string{"disk.img": "file too large to sync yet: 96001 chunks, at most 96000 in one version (about 5.9 GiB)"}
		})}},
			[]string{"problem:too-large"}, []string{"info:in-sync"}},
		{"conflict copy", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) { f.Conflicts = []string{"n.conflict-x.md"} })}},
			[]string{"problem:conflict"}, nil},
		{"path in conflict", Facts{Path: "n.md", Folders: []FolderFacts{with(func(f *FolderFacts) {
			f.Asked = &PathFacts{PathState: PathState{Path: "n.md", Heads: 1, Indexed: true, UpToDate: true, Conflicts: []string{"n.conflict-x.md"}}}
		})}}, []string{"problem:conflict"}, nil},
		{"ignored path", Facts{Path: "x.tmp", Folders: []FolderFacts{with(func(f *FolderFacts) {
			f.Asked, f.Ignored = &PathFacts{PathState: PathState{Path: "x.tmp"}}, true
		})}}, []string{"problem:ignored"}, []string{"info:in-sync"}},
		{"unsafe with no peer", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) { f.Unsafe, f.AnyPeer = 2, false })}, Peers: []api.PeerDiagnosis{offline}},
			[]string{"warning:unsafe"}, nil},
		{"unsafe alone in a vault", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) { f.Unsafe, f.AnyPeer, f.Shared = 2, false, false })}},
			[]string{"info:in-sync"}, []string{"warning:unsafe"}},
		{"watch limit", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) {
			f.Watcher = api.WatcherHealth{Enabled: true, MaxUserWatches: 100, Directories: 150}
		})}}, []string{"problem:watcher-limit"}, nil},
		{"watch limit nearly reached", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) {
			f.Watcher = api.WatcherHealth{Enabled: true, MaxUserWatches: 100, Directories: 85}
		})}}, []string{"warning:watcher-limit"}, nil},
		{"disk nearly full", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) { f.DiskFreeBytes, f.DiskTotalBytes = 1<<20, 1<<40 })}},
			[]string{"problem:disk-full"}, nil},
		{"clock skew", Facts{Folders: []FolderFacts{folderOK}, Peers: []api.PeerDiagnosis{func() api.PeerDiagnosis { p := online; p.ClockSkewMillis = ms(-90 * time.Second); return p }()}},
			[]string{"warning:clock-skew"}, nil},
		{"relay unreachable with unsafe work", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) {
			f.Unsafe, f.Relays = 3, []api.RelayInfo{{ID: peerA, Addr: "/ip4/203.0.113.7/tcp/4001/p2p/" + peerA}}
		})}}, []string{"warning:relay-offline"}, []string{"info:in-sync"}},
		{"relay unreachable, nothing unsafe", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) {
			f.Relays = []api.RelayInfo{{ID: peerA, Addr: "/ip4/203.0.113.7/tcp/4001/p2p/" + peerA}}
		})}}, []string{"info:relay-offline", "info:in-sync"}, []string{"warning:relay-offline"}},
		{"relay refused the vault", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) {
			f.Relays = []api.RelayInfo{{ID: peerA, Connected: true, Error: "this relay does not serve that vault (operator allow-list)"}}
		})}}, []string{"problem:relay-refused"}, nil},
		{"relay full", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) {
			f.Relays = []api.RelayInfo{{ID: peerA, Connected: true, Quota: &api.RelayQuota{Bytes: 10 << 30, BytesLimit: 10 << 30, Entries: 5, EntriesLimit: 100, Full: true}}}
		})}}, []string{"warning:relay-full"}, []string{"info:in-sync"}},
		{"relay rolled back", Facts{Folders: []FolderFacts{with(func(f *FolderFacts) {
			f.Rollbacks = []api.RelayRollback{{Relay: peerA, Had: 9, Now: 4, Message: "relay X reported an older state than before", At: seen}}
		})}}, []string{"warning:relay-rollback"}, nil},
		{"small skew is fine", Facts{Folders: []FolderFacts{folderOK}, Peers: []api.PeerDiagnosis{func() api.PeerDiagnosis { p := online; p.ClockSkewMillis = ms(time.Second); return p }()}},
			[]string{"info:in-sync"}, []string{"warning:clock-skew"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Diagnose(tt.facts)
			ks := kinds(got)
			for _, w := range tt.want {
				if !slices.Contains(ks, w) {
					t.Errorf("got findings %v, want %s among them", ks, w)
				}
			}
			for _, w := range tt.not {
				if slices.Contains(ks, w) {
					t.Errorf("got findings %v, want no %s", ks, w)
				}
			}
			for i, f := range got {
				if f.Message == "" || f.Fix == "" {
					t.Errorf("finding %d (%s) has message %q and fix %q, want both", i, f.Kind, f.Message, f.Fix)
				}
				if i > 0 && severityRank(got[i-1].Severity) > severityRank(f.Severity) && got[i-1].Kind != "in-sync" {
					t.Errorf("findings not ordered by severity: %v", ks)
				}
			}
		})
	}
}

func TestErrorKind(t *testing.T) {
	tests := []struct{ msg, want string }{
		{"write a: no space left on device", "disk-full"},
		{"open a: permission denied", "permission"},
		{"rename: read-only file system", "read-only"},
		{folder.ErrLocalChange.Error(), "local-edit"},
		{MsgChunkMissing + " (3 chunks)", "chunk-unavailable"},
		{"something else", "apply-error"},
	}
	for _, tt := range tests {
		if got := ErrorKind(tt.msg); got != tt.want {
			t.Errorf("ErrorKind(%q): got %s, want %s", tt.msg, got, tt.want)
		}
	}
}
