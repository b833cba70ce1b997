package node

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/doctor"
	"github.com/weftsync/weft/node/folder"
	"github.com/weftsync/weft/node/watchfallback"
	"github.com/weftsync/weft/protocol/entry"
	"github.com/weftsync/weft/protocol/keys"
)

// errNotInFolder means a path is outside every synced folder.
var errNotInFolder = api.Classified(api.ErrNotFound, "not inside any synced folder")

// resolvePath finds the vault whose folder holds abs (an absolute path on
// disk) and returns the path relative to it, slash-separated ("" for the
// folder itself).
func (n *Node) resolvePath(abs string) (*vault, string, error) {
	try := func(p string) (*vault, string, bool) {
		for _, v := range n.vaultsNow() {
			for _, root := range []string{v.cfg.Folder, evalOr(v.cfg.Folder)} {
				rel, err := filepath.Rel(root, p)
				if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					continue
				}
				if rel == "." {
					rel = ""
				}
				return v, filepath.ToSlash(rel), true
			}
		}
		return nil, "", false
	}
	p := filepath.Clean(abs)
	if v, rel, ok := try(p); ok {
		return v, rel, nil
	}
	if v, rel, ok := try(evalOr(p)); ok {
		return v, rel, nil
	}
	var folders []string
	for _, v := range n.vaultsNow() {
		folders = append(folders, v.cfg.Folder)
	}
	return nil, "", fmt.Errorf("%s: %w (folders: %s)", abs, errNotInFolder, strings.Join(folders, ", "))
}

// evalOr resolves symlinks in p, or returns p.
func evalOr(p string) string {
	if e, err := filepath.EvalSymlinks(p); err == nil {
		return e
	}
	return p
}

// Diagnose answers "why is this not in sync?" for every folder, or for
// one path (absolute, on disk) when abs is not empty. It rescans what it
// looks at first, so its answer is current.
func (b apiBackend) Diagnose(ctx context.Context, abs string) (api.Diagnosis, error) {
	d := api.Diagnosis{Time: b.now().UTC(), Folders: []api.FolderDiagnosis{}, Peers: []api.PeerDiagnosis{}, Findings: []api.Finding{}}
	facts := doctor.Facts{}
	vaults := b.vaultsNow()
	var asked string
	if abs != "" {
		v, rel, err := b.resolvePath(abs)
		if err != nil {
			return d, err
		}
		vaults, asked = []*vault{v}, rel
		d.Folder, d.Path, facts.Path = v.cfg.Folder, rel, rel
	}
	for _, v := range vaults {
		if _, err := b.scanNoted(ctx, v, asked, abs != ""); err != nil && ctx.Err() != nil {
			return d, err
		}
	}
	facts.Peers = b.diagnosePeers(ctx, vaults)
	st := b.Status()
	for _, v := range vaults {
		fs := st.Folders[slices.Index(b.vaultsNow(), v)]
		facts.Folders = append(facts.Folders, b.folderFacts(v, fs, asked, abs != "", facts.Peers))
	}
	for _, fo := range facts.Folders {
		d.Folders = append(d.Folders, fo.FolderDiagnosis)
	}
	d.Peers = facts.Peers
	facts.SelfCorrection = b.clocks.Correction(b.now())
	d.ClockCorrectionMillis = facts.SelfCorrection.Milliseconds()
	d.Findings = doctor.Diagnose(facts)
	d.Healthy = !doctor.HasSeverity(d.Findings, api.SeverityProblem)
	return d, nil
}

// scanNoted scans v (or one path of it) and notes what the scan skipped.
func (n *Node) scanNoted(ctx context.Context, v *vault, rel string, onePath bool) (api.ScanResult, error) {
	var paths []string
	if onePath {
		paths = []string{rel}
	}
	start := time.Now()
	res, err := v.scan(ctx, paths)
	if err != nil {
		return api.ScanResult{}, err
	}
	if m := n.monitor(); m != nil {
		m.scans.Scanned(v.cfg.Folder, paths, res, time.Now())
		m.metrics.ObserveScan(v.cfg.Folder, scanScope(paths), time.Since(start))
	}
	out := api.ScanResult{
		Folder: v.cfg.Folder, Path: rel, Files: res.Files, Dirs: res.Dirs, Bytes: res.Bytes,
		Changes: res.NumChanges(), Changed: []api.ScanChange{}, Unsettled: res.Unsettled, Skipped: []api.PathMessage{},
		Millis: time.Since(start).Milliseconds(),
	}
	if out.Unsettled == nil {
		out.Unsettled = []string{}
	}
	for i, c := range res.Changes {
		if i == maxChangesListed {
			break
		}
		out.Changed = append(out.Changed, api.ScanChange{Path: c.Path, Change: c.Type.String()})
	}
	for _, s := range res.Skipped {
		out.Skipped = append(out.Skipped, api.PathMessage{Path: s.Path, Reason: s.Err.Error()})
	}
	if onePath && rel != "" {
		isDir := false
		if info, err := v.fs.Lstat(rel); err == nil {
			isDir = info.Kind == folder.KindDir
		}
		out.Ignored = v.ignored(rel, isDir)
	}
	return out, nil
}

// maxChangesListed bounds the changes a scan result lists by path.
const maxChangesListed = 1000

func (n *Node) folderFacts(v *vault, fs api.FolderStatus, asked string, onePath bool, peers []api.PeerDiagnosis) doctor.FolderFacts {
	view := v.counts()
	fo := doctor.FolderFacts{
		FolderDiagnosis: api.FolderDiagnosis{
			Path: fs.Path, State: fs.State, PendingApply: fs.PendingApply, PendingFetch: fs.PendingFetch,
			PendingUpload: fs.PendingUpload, Unsafe: fs.Unsafe,
			Watcher: api.WatcherHealth{Enabled: !n.cfg.NoWatcher && n.cfg.FolderFS == nil, MaxUserWatches: maxUserWatches(), Directories: view.dirs + 1},
		},
		Errs: view.errs, Conflicts: view.conflicts, AnyPeer: len(n.connectedMembers(v)) > 0, Shared: len(v.roster.Members()) > 1,
	}
	for _, e := range fs.Errors {
		if e.Code != "" {
			fo.Coded = append(fo.Coded, e)
		}
	}
	if n.cfg.FolderFS == nil {
		fo.DiskFreeBytes, fo.DiskTotalBytes = diskSpace(v.cfg.Folder)
	}
	for _, r := range n.API().Relays() {
		if r.Folder == v.cfg.Folder {
			fo.Relays = append(fo.Relays, r)
		}
	}
	fo.Rollbacks = v.claims().Rollbacks()
	fo.Versions = v.keep.Info()
	if m := n.monitor(); m != nil {
		fo.Skipped, fo.Unsettled, fo.Watcher.OverflowRescans, fo.Watcher.Failed = m.scans.Problems(v.cfg.Folder)
	}
	withHolders := func(pv doctor.PathState) doctor.PathFacts {
		pf := doctor.PathFacts{PathState: pv}
		if pv.Heads > 0 {
			for _, h := range v.peers.Holders(pv.Winner) {
				if h != n.id.ID() {
					pf.Holders = append(pf.Holders, h.String())
				}
			}
		}
		return pf
	}
	if onePath {
		pf := withHolders(v.pathState(asked))
		fo.Asked = &pf
		isDir := pf.Indexed && pf.Kind == entry.KindDir
		if info, err := v.fs.Lstat(asked); err == nil {
			isDir = info.Kind == folder.KindDir
		}
		fo.Ignored = asked != "" && v.ignored(asked, isDir)
		return fo
	}
	pending := slices.Clone(view.dirty)
	for p := range view.errs {
		if !slices.Contains(pending, p) {
			pending = append(pending, p)
		}
	}
	slices.Sort(pending)
	if len(pending) > doctor.MaxPendingShown {
		fo.More = len(pending) - doctor.MaxPendingShown
		pending = pending[:doctor.MaxPendingShown]
	}
	for _, p := range pending {
		fo.Pending = append(fo.Pending, withHolders(v.pathState(p)))
	}
	return fo
}

// diagnosePeers describes every other member of vaults, pinging the
// connected ones (at most 2 s, all at once).
func (n *Node) diagnosePeers(ctx context.Context, vaults []*vault) []api.PeerDiagnosis {
	known := map[keys.DeviceID][]string{}
	names := map[keys.DeviceID]string{}
	var devs []keys.DeviceID
	for _, v := range vaults {
		kp := v.book.All()
		for _, d := range v.roster.Members() {
			if d == n.id.ID() || slices.Contains(devs, d) {
				continue
			}
			devs = append(devs, d)
			known[d] = kp[d]
			names[d] = v.roster.Name(d)
		}
	}
	st := n.Status()
	out := make([]api.PeerDiagnosis, len(devs))
	var wg sync.WaitGroup
	for i, d := range devs {
		p := api.PeerDiagnosis{ID: d.String(), Name: names[d], Connection: "offline", Addrs: known[d]}
		if p.Addrs == nil {
			p.Addrs = []string{}
		}
		for _, ps := range st.Peers {
			if ps.ID == p.ID {
				p.Connection, p.LastSeen, p.InSync = ps.Connection, ps.LastSeen, ps.InSync
			}
		}
		pid, err := PeerIDOf(d)
		p.Reachable = err == nil && n.host.Network().Connectedness(pid) == network.Connected
		if m := n.monitor(); m != nil {
			p.SentBytesPerSec, p.RecvBytesPerSec, _ = m.throughput(d)
			_, _, over := m.throughput(d)
			p.ThroughputSeconds = over.Seconds()
		}
		if s, ok := n.clocks.Last(d); ok {
			p.ClockSkewMillis, p.ClockErrorMillis = skewFields(s)
		}
		out[i] = p
		if p.Reachable {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				if s, err := n.measureClock(pctx, d); err == nil {
					out[i].ClockSkewMillis, out[i].ClockErrorMillis = skewFields(s)
				}
				rtt := n.host.Peerstore().LatencyEWMA(pid)
				if r, ok := <-ping.Ping(pctx, n.host, pid); ok && r.Error == nil {
					rtt = r.RTT
				}
				if rtt > 0 {
					ms := float64(rtt.Microseconds()) / 1000
					out[i].RTTMillis = &ms
				}
			})
		}
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b api.PeerDiagnosis) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// maxUserWatches reads the per-user inotify watch limit (Linux only).
func maxUserWatches() int {
	if runtime.GOOS != "linux" {
		return 0
	}
	// The system-wide sysctl, and since Linux 5.11 the limit of the user
	// namespace weft runs in; the lower one applies.
	n := 0
	for _, f := range []string{"/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches"} {
		if m := watchfallback.ReadLimit(f); m > 0 && (n == 0 || m < n) {
			n = m
		}
	}
	return n
}
