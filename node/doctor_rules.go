package node

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The rules of `weft doctor`: from facts gathered about the folders and
// peers (doctor.go) to findings, each naming a cause and what to do about
// it. They are a pure function of the facts, so they are tested without a
// network or a disk.

// Severities of a Finding.
const (
	SeverityProblem = "problem" // something does not sync until it is acted on
	SeverityWarning = "warning" // a risk, or a delay that may resolve itself
	SeverityInfo    = "info"    // what is happening; nothing to do
)

// Finding is one answer to "why is this not in sync?".
type Finding struct {
	Severity string `json:"severity"`
	// Kind is one of: in-sync, peer-offline, peer-reachable, chunk-unavailable,
	// local-edit, conflict, resolving, ignored, unreadable, permission,
	// disk-full, read-only, cannot-sync, too-large, apply-error, applying, unsafe,
	// uploading, watcher-limit, watcher-overflow, watcher-failed,
	// clock-skew, scanning, relay-offline, relay-refused, relay-full,
	// relay-rollback, and the folder error codes of docs/api.md
	// (folder-marker-missing, folder-marker-foreign, folder-unreadable,
	// mass-delete, corrupt, membership-lost, log-unconfirmed).
	Kind    string `json:"kind"`
	Folder  string `json:"folder,omitempty"`
	Path    string `json:"path,omitempty"`
	Peer    string `json:"peer,omitempty"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

// doctorFacts is everything the rules look at.
type doctorFacts struct {
	path    string // the path asked about (relative to its folder), "" for all
	folders []folderFacts
	peers   []PeerDiagnosis
}

type folderFacts struct {
	FolderDiagnosis
	errs      map[string]string
	conflicts []string
	skipped   map[string]string
	unsettled []string
	pending   []pathFacts // pending paths, in order, at most maxPendingShown
	more      int         // pending paths not in pending
	asked     *pathFacts  // the path asked about, if any
	ignored   bool        // the path asked about is ignored
	anyPeer   bool        // some member is connected
	shared    bool        // the vault has other members
	relays    []RelayInfo // the vault's relays
	rollbacks []RelayRollback
	coded     []PathMessage // the folder's errors[] items that carry a code
	versions  VersionsInfo  // the local version store
}

type pathFacts struct {
	pathView
	holders []string // members that may hold the content, peer IDs
}

// maxPendingShown bounds the pending paths doctor explains one by one.
const maxPendingShown = 50

func (f *doctorFacts) peer(id string) (PeerDiagnosis, bool) {
	for _, p := range f.peers {
		if p.ID == id {
			return p, true
		}
	}
	return PeerDiagnosis{}, false
}

// peerName is how a finding names a peer.
func peerName(id string) string {
	if len(id) > 16 {
		return id[len(id)-8:]
	}
	return id
}

func since(p PeerDiagnosis) string {
	if p.LastSeen == nil {
		return "never seen by this device"
	}
	return "last seen " + p.LastSeen.Local().Format(time.DateTime)
}

// errorKind classifies an apply or scan error message.
func errorKind(msg string) string {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "changed locally since last scan"), strings.Contains(m, "changed while being read"):
		return "local-edit"
	case strings.Contains(m, errChunkMissing.Error()):
		return "chunk-unavailable"
	case strings.Contains(m, "no space left"), strings.Contains(m, "quota exceeded"):
		return "disk-full"
	case strings.Contains(m, "read-only file system"):
		return "read-only"
	case strings.Contains(m, ErrFileTooLarge.Error()):
		return "too-large"
	case strings.Contains(m, "permission denied"), strings.Contains(m, "operation not permitted"), strings.Contains(m, "access is denied"):
		return "permission"
	}
	return "apply-error"
}

// diagnose turns facts into findings, most severe first.
func diagnose(f doctorFacts) []Finding {
	var out []Finding
	add := func(x Finding) { out = append(out, x) }
	needed := map[string]bool{} // offline peers some pending path waits on
	for _, fo := range f.folders {
		folder := fo.Path
		if f.path != "" && fo.asked != nil {
			if fo.ignored {
				add(Finding{SeverityProblem, "ignored", folder, f.path, "",
					fmt.Sprintf("%s is excluded by the ignore rules (.weftignore), so weft neither records nor applies it", f.path),
					"remove or negate (!pattern) the matching rule in .weftignore at the folder's root, then run `weft scan`"})
			}
			out = append(out, pathFindings(f, fo, *fo.asked, needed)...)
		} else {
			for _, p := range fo.pending {
				out = append(out, pathFindings(f, fo, p, needed)...)
			}
			if fo.more > 0 {
				add(Finding{SeverityInfo, "applying", folder, "", "",
					fmt.Sprintf("%d more paths are pending; run `weft doctor PATH` for one of them", fo.more), "nothing, unless one of the findings above applies to them too"})
			}
		}
		relevant := func(p string) bool {
			return f.path == "" || p == f.path || strings.HasPrefix(p, f.path+"/")
		}
		for _, p := range sortedKeys(fo.skipped) {
			if !relevant(p) {
				continue
			}
			reason := fo.skipped[p]
			switch errorKind(reason) {
			case "permission":
				add(Finding{SeverityProblem, "unreadable", folder, p, "",
					fmt.Sprintf("weft cannot read %s: %s", p, reason),
					fmt.Sprintf("make it readable by the user running weft (chmod u+r %q), or add it to .weftignore", p)})
			case "too-large":
				add(Finding{SeverityProblem, "too-large", folder, p, "",
					fmt.Sprintf("weft cannot sync %s: %s", p, reason),
					"move it out of the folder or add it to .weftignore; files this large are not supported yet"})
			case "local-edit":
				add(Finding{SeverityInfo, "local-edit", folder, p, "",
					fmt.Sprintf("%s changed while weft was reading it; it is recorded once it has been quiet", p),
					"nothing; if it never stops changing (a log, a database), add it to .weftignore"})
			default:
				add(Finding{SeverityProblem, "cannot-sync", folder, p, "",
					fmt.Sprintf("weft cannot sync %s: %s", p, reason),
					"rename it (names must be valid UTF-8 in NFC, without characters other systems reject) or add it to .weftignore"})
			}
		}
		for _, p := range fo.unsettled {
			if relevant(p) {
				add(Finding{SeverityInfo, "local-edit", folder, p, "",
					fmt.Sprintf("a local edit of %s is being settled: weft records it once the file has been quiet", p),
					"nothing; if it never stops changing (a log, a database), add it to .weftignore"})
			}
		}
		if f.path == "" {
			for _, c := range fo.conflicts {
				add(Finding{SeverityProblem, "conflict", folder, c, "",
					fmt.Sprintf("%s is a conflict copy: two devices changed the same file at once and both versions were kept", c),
					"compare it with the original, keep what you want in the original and delete the copy (`weft conflicts` lists them)"})
			}
			if fo.Unsafe > 0 && !fo.anyPeer && fo.shared {
				add(Finding{SeverityWarning, "unsafe", folder, "", "",
					fmt.Sprintf("%d entries written on this device are held by no other device yet", fo.Unsafe),
					"keep this device on until another member connects (see the offline peers below)"})
			}
			if fo.PendingUpload > 0 && fo.anyPeer {
				add(Finding{SeverityInfo, "uploading", folder, "", "",
					fmt.Sprintf("%d log entries are on their way to connected peers", fo.PendingUpload), "nothing; they are being sent"})
			}
			if fo.State == "scanning" {
				add(Finding{SeverityInfo, "scanning", folder, "", "", "the folder is being scanned", "nothing; wait for the scan to finish"})
			}
			out = append(out, folderHealth(fo)...)
			out = append(out, relayFindings(fo)...)
		}
	}
	for _, p := range f.peers {
		out = append(out, peerFindings(f, p, needed[p.ID])...)
	}
	slices.SortStableFunc(out, func(a, b Finding) int { return severityRank(a.Severity) - severityRank(b.Severity) })
	if !hasSeverity(out, SeverityProblem, SeverityWarning) {
		what := "everything"
		if f.path != "" {
			what = f.path
		}
		in := Finding{SeverityInfo, "in-sync", "", f.path, "", what + " is in sync as far as this device knows: nothing is pending", "nothing"}
		for _, fo := range f.folders {
			if fo.PendingApply+fo.PendingFetch+fo.PendingUpload > 0 || fo.State == "scanning" {
				in.Message = what + " is syncing: the work above is under way"
			}
		}
		out = append([]Finding{in}, out...)
	}
	return out
}

func severityRank(s string) int {
	switch s {
	case SeverityProblem:
		return 0
	case SeverityWarning:
		return 1
	}
	return 2
}

func hasSeverity(fs []Finding, sev ...string) bool {
	for _, f := range fs {
		if slices.Contains(sev, f.Severity) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// pathFindings explains one path.
func pathFindings(f doctorFacts, fo folderFacts, p pathFacts, needed map[string]bool) []Finding {
	folder := fo.Path
	var out []Finding
	add := func(sev, kind, peer, msg, fix string) {
		out = append(out, Finding{sev, kind, folder, p.path, peer, msg, fix})
	}
	var online, offline []string
	for _, h := range p.holders {
		if pd, ok := f.peer(h); ok && pd.Reachable {
			online = append(online, h)
		} else if ok {
			offline = append(offline, h)
		}
	}
	if len(p.conflicts) > 0 {
		add(SeverityProblem, "conflict", "",
			fmt.Sprintf("%s is in conflict: both versions were kept, the other as %s", p.path, strings.Join(p.conflicts, ", ")),
			"compare the copy with the original, keep what you want in the original and delete the copy")
	}
	if p.heads > 1 {
		add(SeverityInfo, "resolving", "",
			fmt.Sprintf("%s has %d concurrent versions; weft is resolving them (merge, or a conflict copy)", p.path, p.heads),
			"nothing; the outcome is recorded once and is the same on every device")
	}
	pending := p.dirty || p.err != "" || (!p.upToDate && p.heads > 0)
	if !pending {
		if f.path != "" && p.heads == 0 && !p.indexed && !fo.ignored {
			add(SeverityInfo, "in-sync", "", fmt.Sprintf("weft knows no version of %s and it is not on disk here", p.path),
				"check the path; run `weft scan PATH` after creating it")
		}
		return out
	}
	missing := p.chunks - p.local
	switch kind := errorKind(p.err); {
	case p.err == "" && missing > 0 && len(online) == 0:
		for _, h := range offline {
			needed[h] = true
		}
		add(SeverityProblem, "peer-offline", strings.Join(offline, ","),
			fmt.Sprintf("%s waits for %d chunks that only offline devices hold (%s)", p.path, missing, names(offline)),
			fmt.Sprintf("start weft on %s, or connect it to this device's network", names(offline)))
	case p.err == "":
		add(SeverityInfo, "applying", "", fmt.Sprintf("%s is being applied", p.path), "nothing; it is under way")
	case kind == "chunk-unavailable" && len(online) == 0:
		for _, h := range offline {
			needed[h] = true
		}
		add(SeverityProblem, "chunk-unavailable", strings.Join(offline, ","),
			fmt.Sprintf("%s needs %d chunks that no reachable device holds; the devices that may hold them are offline: %s", p.path, missing, names(offline)),
			fmt.Sprintf("start weft on %s (or connect it to this device's network); the file arrives once one of them is reachable", names(offline)))
	case kind == "chunk-unavailable":
		add(SeverityWarning, "chunk-unavailable", strings.Join(online, ","),
			fmt.Sprintf("%s needs %d chunks that the connected devices (%s) no longer have: the file probably changed there after it was recorded", p.path, missing, names(online)),
			"wait until that device records its newer version (or run `weft scan` on it); weft retries every few seconds")
	case kind == "local-edit":
		add(SeverityInfo, "local-edit", "",
			fmt.Sprintf("%s was edited here since weft last scanned it; the edit is recorded first, then the path is decided again", p.path),
			"nothing; a local edit is never overwritten")
	case kind == "permission":
		add(SeverityProblem, "permission", "", fmt.Sprintf("weft may not write %s: %s", p.path, p.err),
			"give the user running weft write access to the file and its directory (chmod u+w, or chown)")
	case kind == "disk-full":
		add(SeverityProblem, "disk-full", "", fmt.Sprintf("the disk is full: %s cannot be written (%s)", p.path, p.err),
			fmt.Sprintf("free space on the disk that holds %s; weft retries every few seconds", folder))
	case kind == "read-only":
		add(SeverityProblem, "read-only", "", fmt.Sprintf("%s cannot be written: the file system is read-only", p.path),
			"remount the file system read-write")
	default:
		add(SeverityWarning, "apply-error", "", fmt.Sprintf("applying %s failed: %s", p.path, p.err),
			"weft retries every few seconds; if it keeps failing, run `weft doctor --json` and report it")
	}
	return out
}

func names(ids []string) string {
	if len(ids) == 0 {
		return "no known device"
	}
	ns := make([]string, len(ids))
	for i, id := range ids {
		ns[i] = peerName(id)
	}
	return strings.Join(ns, ", ")
}

// folderHealth covers the watcher and the disk.
func folderHealth(fo folderFacts) []Finding {
	var out []Finding
	add := func(sev, kind, msg, fix string) { out = append(out, Finding{sev, kind, fo.Path, "", "", msg, fix}) }
	for _, e := range fo.coded {
		if c, ok := codeFindings[e.Code]; ok {
			out = append(out, Finding{c.severity, e.Code, fo.Path, e.Path, "", e.Reason, c.fix})
		}
	}
	switch vi := fo.versions; {
	case vi.Folder == "":
	case !vi.Available && !vi.Policy.Off:
		add(SeverityWarning, "versions-unavailable", "this device keeps no old versions of the folder's files: its version store could not be opened",
			"see the agent's log for why; until then `weft restore` needs another device or the relay for large files")
	case vi.Failed > 0:
		add(SeverityWarning, "versions-failing", fmt.Sprintf("%d versions could not be kept in the version store since the agent started (a disk error)", vi.Failed),
			"see the agent's log; check the disk that holds weft's home")
	}
	w := fo.Watcher
	limitHit := slices.ContainsFunc(fo.coded, func(e PathMessage) bool { return e.Code == codeWatcherLimit || e.Code == codeWatcherFailed })
	if w.Enabled && w.MaxUserWatches > 0 && !limitHit {
		switch {
		case w.Directories >= w.MaxUserWatches:
			add(SeverityProblem, "watcher-limit",
				fmt.Sprintf("the folder has %d directories but inotify allows %d watches per user: changes in some directories are found only by rescans", w.Directories, w.MaxUserWatches),
				fmt.Sprintf("raise the limit: sudo sysctl fs.inotify.max_user_watches=%d (and set it in /etc/sysctl.d/ to keep it)", nextLimit(w.Directories)))
		case w.Directories*5 >= w.MaxUserWatches*4:
			add(SeverityWarning, "watcher-limit",
				fmt.Sprintf("the folder uses %d of the %d inotify watches allowed per user (other programs use them too)", w.Directories, w.MaxUserWatches),
				fmt.Sprintf("raise the limit: sudo sysctl fs.inotify.max_user_watches=%d", nextLimit(w.Directories)))
		}
	}
	if w.Failed != "" && !limitHit {
		add(SeverityProblem, "watcher-failed", "the file watcher is not running ("+w.Failed+"): changes are found only by rescans",
			"see the agent's log for why the watcher stopped; `weft scan` records changes at once")
	}
	if w.OverflowRescans > 0 {
		add(SeverityWarning, "watcher-overflow",
			fmt.Sprintf("the watcher lost events %d times (too many changes at once) and weft rescanned the folder", w.OverflowRescans),
			"nothing is lost; if it happens often, raise fs.inotify.max_queued_events")
	}
	if fo.DiskTotalBytes > 0 {
		switch {
		case fo.DiskFreeBytes < 64<<20 || fo.DiskFreeBytes*100 < fo.DiskTotalBytes:
			add(SeverityProblem, "disk-full", fmt.Sprintf("the disk that holds the folder has %s free", humanSize(fo.DiskFreeBytes)),
				"free space on it: weft cannot write incoming files")
		case fo.DiskFreeBytes*20 < fo.DiskTotalBytes:
			add(SeverityWarning, "disk-full", fmt.Sprintf("the disk that holds the folder is almost full: %s free", humanSize(fo.DiskFreeBytes)),
				"free space on it before large files arrive")
		}
	}
	return out
}

// codeFindings says how doctor reports each folder error code of status,
// and what to do about it.
var codeFindings = map[string]struct{ severity, fix string }{
	codeMarkerMissing:  {SeverityProblem, "put the real folder back (mount its drive, move it back): weft resumes by itself; if this really is the folder now, run `weft folder reset FOLDER`"},
	codeMarkerForeign:  {SeverityProblem, "check that FOLDER is the folder this vault syncs; if it is, run `weft folder reset FOLDER`"},
	codeUnreadable:     {SeverityProblem, "make the folder readable again (check its drive, mount and permissions); weft resumes by itself"},
	codeMassDelete:     {SeverityProblem, "run `weft deletions` to see them, then `weft deletions accept` to let them go through or `weft deletions reject` to bring the files back"},
	codeCorrupt:        {SeverityProblem, "check the disk (SMART, dmesg); weft writes the recorded version again from local chunks, peers or the relay, and keeps the damaged copy in .weft/corrupt/ for you to compare or delete"},
	codeOwnLogForked:   {SeverityProblem, "give this device a new identity: stop weft here, move its home aside (keep it until the files are safe), `weft join` the vault again into the same folder with an invite from the admin (its files are scanned and synced as the new device's), then revoke the old identity on the admin (`weft revoke OLD-ID`)"},
	codeWatcherFailed:  {SeverityProblem, "see the agent's log for why the watcher stopped (the reason above); `weft scan` records changes at once, and restarting the agent starts a new watcher"},
	codeWatcherLimit:   {SeverityProblem, "raise the system's file watch limit (the reason above says how); weft watches the rest again by itself within 10 s"},
	codeHomeDiskFull:   {SeverityProblem, "free space on the disk that holds weft's home (see the path above; `df -h` shows it): weft resumes by itself, and nothing recorded or sent is lost meanwhile"},
	codeMembershipLost: {SeverityProblem, "start a device that is a member (or the relay) so this one can fetch the membership log again"},
	codeRevoked:        {SeverityProblem, "ask an admin of the vault to add this device again (`weft invite` there, `weft join` here, into a new folder); files already here stay as they are"},
	codeLogUnconfirmed: {SeverityWarning, "keep a member or the relay reachable: local changes are recorded once this device knows its own log is whole"},
}

func nextLimit(dirs int) int { return max(524288, dirs*2) }

func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// peerFindings says how each peer is reached, or why not.
func peerFindings(f doctorFacts, p PeerDiagnosis, needed bool) []Finding {
	var out []Finding
	name := peerName(p.ID)
	if !p.Reachable {
		sev := SeverityWarning
		if needed {
			sev = SeverityProblem
		}
		fix := fmt.Sprintf("start `weft up` on %s; if it is running, check that this device can reach it", name)
		if len(p.Addrs) == 0 {
			fix += " (this device knows no address for it: put both on the same LAN for mDNS, or reconnect them once)"
		} else {
			fix += " at " + strings.Join(p.Addrs, " or ") + " (firewall, network)"
		}
		out = append(out, Finding{sev, "peer-offline", "", "", p.ID, fmt.Sprintf("peer %s is offline (%s)", name, since(p)), fix})
		return out
	}
	if f.path == "" {
		msg := fmt.Sprintf("peer %s is reachable (%s", name, p.Connection)
		if p.RTTMillis != nil {
			msg += fmt.Sprintf(", round trip %.1f ms", *p.RTTMillis)
		}
		msg += fmt.Sprintf(", receiving %s/s, sending %s/s)", humanSize(int64(p.RecvBytesPerSec)), humanSize(int64(p.SentBytesPerSec)))
		fix := "nothing"
		if p.Connection == "relayed" {
			fix = "nothing; a direct connection is faster: open an inbound port on one side or let hole punching work"
		}
		out = append(out, Finding{SeverityInfo, "peer-reachable", "", "", p.ID, msg, fix})
	}
	return append(out, clockSkewFindings(p, name)...) // doctor_clock.go
}

// relayFindings explains what is wrong with a folder's relays: one that
// is unreachable, refused the vault, is full, or went back on what it
// said it held.
func relayFindings(fo folderFacts) []Finding {
	var out []Finding
	folder := fo.Path
	for _, r := range fo.relays {
		name := peerName(r.ID)
		switch {
		case r.Error != "":
			out = append(out, Finding{SeverityProblem, "relay-refused", folder, "", r.ID,
				fmt.Sprintf("relay %s refused to serve this vault: %s", name, r.Error),
				"ask the relay's operator to allow the vault (weft relay --allow, --max-vaults), or remove the relay with `weft relay remove`"})
		case !r.Connected:
			sev, why := SeverityInfo, "devices that are offline now get this device's changes from other devices only"
			if fo.Unsafe > 0 {
				sev, why = SeverityWarning, fmt.Sprintf("%d entries written here are held by no other device or relay yet", fo.Unsafe)
			}
			out = append(out, Finding{sev, "relay-offline", folder, "", r.ID,
				fmt.Sprintf("relay %s (%s) is not reachable: %s", name, r.Addr, why),
				"check that the relay runs and that its ports (TCP and UDP, usually 4001) are open; `weft relay list` shows the address"})
		case r.Quota != nil && r.Quota.Full:
			fix := "ask the relay's operator to raise --quota-bytes or --quota-entries; old versions it no longer retains are freed by its garbage collection"
			if i := slices.IndexFunc(fo.coded, func(e PathMessage) bool { return e.Code == codeRelayFull && e.Peer == r.ID }); i >= 0 {
				// It lacks entries this device holds: they do not reach it.
				out = append(out, Finding{SeverityProblem, "relay-full", folder, "", r.ID, fo.coded[i].Reason, fix})
				continue
			}
			out = append(out, Finding{SeverityWarning, "relay-full", folder, "", r.ID,
				fmt.Sprintf("relay %s has reached its quota for this vault (%s of %s, %d of %d entries): it keeps what it has and takes nothing new",
					name, humanSize(int64(r.Quota.Bytes)), limitSize(r.Quota.BytesLimit), r.Quota.Entries, r.Quota.EntriesLimit), fix})
		}
	}
	for _, rb := range fo.rollbacks {
		out = append(out, Finding{SeverityWarning, "relay-rollback", folder, "", rb.Relay,
			rb.Message + " (at " + rb.At.UTC().Format(time.RFC3339) + ")",
			"its earlier acknowledgements no longer count as safe; keep another device or relay holding your data, and ask the relay's operator whether it was restored from a backup or is faulty"})
	}
	return out
}

// limitSize shows a quota limit; 0 is none.
func limitSize(n uint64) string {
	if n == 0 {
		return "no limit"
	}
	return humanSize(int64(n))
}
