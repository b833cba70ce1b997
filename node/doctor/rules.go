package doctor

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weftsync/weft/node/api"
)

func (f *Facts) peer(id string) (api.PeerDiagnosis, bool) {
	for _, p := range f.Peers {
		if p.ID == id {
			return p, true
		}
	}
	return api.PeerDiagnosis{}, false
}

// peerName is how a finding names a peer.
func peerName(id string) string {
	if len(id) > 16 {
		return id[len(id)-8:]
	}
	return id
}

func since(p api.PeerDiagnosis) string {
	if p.LastSeen == nil {
		return "never seen by this device"
	}
	return "last seen " + p.LastSeen.Local().Format(time.DateTime)
}

// Messages of the agent's errors that ErrorKind recognises: the agent
// makes those errors from these texts, so a message stored in a status
// (a string by then) is still classified.
const (
	MsgChunkMissing = "chunk not available from any peer"
	MsgFileTooLarge = "file too large to sync"
)

// ErrorKind classifies an apply or scan error message.
func ErrorKind(msg string) string {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "changed locally since last scan"), strings.Contains(m, "changed while being read"):
		return "local-edit"
	case strings.Contains(m, MsgChunkMissing):
		return "chunk-unavailable"
	case strings.Contains(m, "no space left"), strings.Contains(m, "quota exceeded"):
		return "disk-full"
	case strings.Contains(m, "read-only file system"):
		return "read-only"
	case strings.Contains(m, MsgFileTooLarge):
		return "too-large"
	case strings.Contains(m, "permission denied"), strings.Contains(m, "operation not permitted"), strings.Contains(m, "access is denied"):
		return "permission"
	}
	return "apply-error"
}

// Diagnose turns facts into findings, most severe first.
func Diagnose(f Facts) []api.Finding {
	var out []api.Finding
	add := func(x api.Finding) { out = append(out, x) }
	needed := map[string]bool{} // offline peers some pending path waits on
	for _, fo := range f.Folders {
		folder := fo.Path
		if f.Path != "" && fo.Asked != nil {
			if fo.Ignored {
				add(finding(api.SeverityProblem, "ignored", folder, f.Path, "",
					fmt.Sprintf("%s is excluded by the ignore rules (.weftignore), so weft neither records nor applies it", f.Path),
					"remove or negate (!pattern) the matching rule in .weftignore at the folder's root, then run `weft scan`"))
			}
			out = append(out, pathFindings(f, fo, *fo.Asked, needed)...)
		} else {
			for _, p := range fo.Pending {
				out = append(out, pathFindings(f, fo, p, needed)...)
			}
			if fo.More > 0 {
				add(finding(api.SeverityInfo, "applying", folder, "", "",
					fmt.Sprintf("%d more paths are pending; run `weft doctor PATH` for one of them", fo.More), "nothing, unless one of the findings above applies to them too"))
			}
		}
		relevant := func(p string) bool {
			return f.Path == "" || p == f.Path || strings.HasPrefix(p, f.Path+"/")
		}
		for _, p := range sortedKeys(fo.Skipped) {
			if !relevant(p) {
				continue
			}
			reason := fo.Skipped[p]
			switch ErrorKind(reason) {
			case "permission":
				add(finding(api.SeverityProblem, "unreadable", folder, p, "",
					fmt.Sprintf("weft cannot read %s: %s", p, reason),
					fmt.Sprintf("make it readable by the user running weft (chmod u+r %q), or add it to .weftignore", p)))
			case "too-large":
				add(finding(api.SeverityProblem, "too-large", folder, p, "",
					fmt.Sprintf("weft cannot sync %s: %s", p, reason),
					"move it out of the folder or add it to .weftignore; files this large are not supported yet"))
			case "local-edit":
				add(finding(api.SeverityInfo, "local-edit", folder, p, "",
					fmt.Sprintf("%s changed while weft was reading it; it is recorded once it has been quiet", p),
					"nothing; if it never stops changing (a log, a database), add it to .weftignore"))
			default:
				add(finding(api.SeverityProblem, "cannot-sync", folder, p, "",
					fmt.Sprintf("weft cannot sync %s: %s", p, reason),
					"rename it (names must be valid UTF-8 in NFC, without characters other systems reject) or add it to .weftignore"))
			}
		}
		for _, p := range fo.Unsettled {
			if relevant(p) {
				add(finding(api.SeverityInfo, "local-edit", folder, p, "",
					fmt.Sprintf("a local edit of %s is being settled: weft records it once the file has been quiet", p),
					"nothing; if it never stops changing (a log, a database), add it to .weftignore"))
			}
		}
		if f.Path == "" {
			for _, c := range fo.Conflicts {
				add(finding(api.SeverityProblem, "conflict", folder, c, "",
					fmt.Sprintf("%s is a conflict copy: two devices changed the same file at once and both versions were kept", c),
					"compare it with the original, keep what you want in the original and delete the copy (`weft conflicts` lists them)"))
			}
			if fo.Unsafe > 0 && !fo.AnyPeer && fo.Shared {
				add(finding(api.SeverityWarning, "unsafe", folder, "", "",
					fmt.Sprintf("%d entries written on this device are held by no other device yet", fo.Unsafe),
					"keep this device on until another member connects (see the offline peers below)"))
			}
			if fo.PendingUpload > 0 && fo.AnyPeer {
				add(finding(api.SeverityInfo, "uploading", folder, "", "",
					fmt.Sprintf("%d log entries are on their way to connected peers", fo.PendingUpload), "nothing; they are being sent"))
			}
			if fo.State == "scanning" {
				add(finding(api.SeverityInfo, "scanning", folder, "", "", "the folder is being scanned", "nothing; wait for the scan to finish"))
			}
			out = append(out, folderHealth(fo)...)
			out = append(out, relayFindings(fo)...)
		}
	}
	for _, p := range f.Peers {
		out = append(out, peerFindings(f, p, needed[p.ID])...)
	}
	slices.SortStableFunc(out, func(a, b api.Finding) int { return severityRank(a.Severity) - severityRank(b.Severity) })
	if !HasSeverity(out, api.SeverityProblem, api.SeverityWarning) {
		what := "everything"
		if f.Path != "" {
			what = f.Path
		}
		in := finding(api.SeverityInfo, "in-sync", "", f.Path, "", what+" is in sync as far as this device knows: nothing is pending", "nothing")
		for _, fo := range f.Folders {
			if fo.PendingApply+fo.PendingFetch+fo.PendingUpload > 0 || fo.State == "scanning" {
				in.Message = what + " is syncing: the work above is under way"
			}
		}
		out = append([]api.Finding{in}, out...)
	}
	return out
}

func severityRank(s string) int {
	switch s {
	case api.SeverityProblem:
		return 0
	case api.SeverityWarning:
		return 1
	}
	return 2
}

func HasSeverity(fs []api.Finding, sev ...string) bool {
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
func pathFindings(f Facts, fo FolderFacts, p PathFacts, needed map[string]bool) []api.Finding {
	folder := fo.Path
	var out []api.Finding
	add := func(sev, kind, peer, msg, fix string) {
		out = append(out, finding(sev, kind, folder, p.Path, peer, msg, fix))
	}
	var online, offline []string
	for _, h := range p.Holders {
		if pd, ok := f.peer(h); ok && pd.Reachable {
			online = append(online, h)
		} else if ok {
			offline = append(offline, h)
		}
	}
	if len(p.Conflicts) > 0 {
		add(api.SeverityProblem, "conflict", "",
			fmt.Sprintf("%s is in conflict: both versions were kept, the other as %s", p.Path, strings.Join(p.Conflicts, ", ")),
			"compare the copy with the original, keep what you want in the original and delete the copy")
	}
	if p.Heads > 1 {
		add(api.SeverityInfo, "resolving", "",
			fmt.Sprintf("%s has %d concurrent versions; weft is resolving them (merge, or a conflict copy)", p.Path, p.Heads),
			"nothing; the outcome is recorded once and is the same on every device")
	}
	pending := p.Dirty || p.Err != "" || (!p.UpToDate && p.Heads > 0)
	if !pending {
		if f.Path != "" && p.Heads == 0 && !p.Indexed && !fo.Ignored {
			add(api.SeverityInfo, "in-sync", "", fmt.Sprintf("weft knows no version of %s and it is not on disk here", p.Path),
				"check the path; run `weft scan PATH` after creating it")
		}
		return out
	}
	missing := p.Chunks - p.Local
	switch kind := ErrorKind(p.Err); {
	case p.Err == "" && missing > 0 && len(online) == 0:
		for _, h := range offline {
			needed[h] = true
		}
		add(api.SeverityProblem, "peer-offline", strings.Join(offline, ","),
			fmt.Sprintf("%s waits for %d chunks that only offline devices hold (%s)", p.Path, missing, names(offline)),
			fmt.Sprintf("start weft on %s, or connect it to this device's network", names(offline)))
	case p.Err == "":
		add(api.SeverityInfo, "applying", "", fmt.Sprintf("%s is being applied", p.Path), "nothing; it is under way")
	case kind == "chunk-unavailable" && len(online) == 0:
		for _, h := range offline {
			needed[h] = true
		}
		add(api.SeverityProblem, "chunk-unavailable", strings.Join(offline, ","),
			fmt.Sprintf("%s needs %d chunks that no reachable device holds; the devices that may hold them are offline: %s", p.Path, missing, names(offline)),
			fmt.Sprintf("start weft on %s (or connect it to this device's network); the file arrives once one of them is reachable", names(offline)))
	case kind == "chunk-unavailable":
		add(api.SeverityWarning, "chunk-unavailable", strings.Join(online, ","),
			fmt.Sprintf("%s needs %d chunks that the connected devices (%s) no longer have: the file probably changed there after it was recorded", p.Path, missing, names(online)),
			"wait until that device records its newer version (or run `weft scan` on it); weft retries every few seconds")
	case kind == "local-edit":
		add(api.SeverityInfo, "local-edit", "",
			fmt.Sprintf("%s was edited here since weft last scanned it; the edit is recorded first, then the path is decided again", p.Path),
			"nothing; a local edit is never overwritten")
	case kind == "permission":
		add(api.SeverityProblem, "permission", "", fmt.Sprintf("weft may not write %s: %s", p.Path, p.Err),
			"give the user running weft write access to the file and its directory (chmod u+w, or chown)")
	case kind == "disk-full":
		add(api.SeverityProblem, "disk-full", "", fmt.Sprintf("the disk is full: %s cannot be written (%s)", p.Path, p.Err),
			fmt.Sprintf("free space on the disk that holds %s; weft retries every few seconds", folder))
	case kind == "read-only":
		add(api.SeverityProblem, "read-only", "", fmt.Sprintf("%s cannot be written: the file system is read-only", p.Path),
			"remount the file system read-write")
	default:
		add(api.SeverityWarning, "apply-error", "", fmt.Sprintf("applying %s failed: %s", p.Path, p.Err),
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
func folderHealth(fo FolderFacts) []api.Finding {
	var out []api.Finding
	add := func(sev, kind, msg, fix string) { out = append(out, finding(sev, kind, fo.Path, "", "", msg, fix)) }
	for _, e := range fo.Coded {
		if c, ok := codeFindings[e.Code]; ok {
			out = append(out, finding(c.severity, e.Code, fo.Path, e.Path, "", e.Reason, c.fix))
		}
	}
	switch vi := fo.Versions; {
	case vi.Folder == "":
	case !vi.Available && !vi.Policy.Off:
		add(api.SeverityWarning, "versions-unavailable", "this device keeps no old versions of the folder's files: its version store could not be opened",
			"see the agent's log for why; until then `weft restore` needs another device or the relay for large files")
	case vi.Failed > 0:
		add(api.SeverityWarning, "versions-failing", fmt.Sprintf("%d versions could not be kept in the version store since the agent started (a disk error)", vi.Failed),
			"see the agent's log; check the disk that holds weft's home")
	}
	w := fo.Watcher
	limitHit := slices.ContainsFunc(fo.Coded, func(e api.PathMessage) bool { return e.Code == api.CodeWatcherLimit || e.Code == api.CodeWatcherFailed })
	if w.Enabled && w.MaxUserWatches > 0 && !limitHit {
		switch {
		case w.Directories >= w.MaxUserWatches:
			add(api.SeverityProblem, "watcher-limit",
				fmt.Sprintf("the folder has %d directories but inotify allows %d watches per user: changes in some directories are found only by rescans", w.Directories, w.MaxUserWatches),
				fmt.Sprintf("raise the limit: sudo sysctl fs.inotify.max_user_watches=%d (and set it in /etc/sysctl.d/ to keep it)", nextLimit(w.Directories)))
		case w.Directories*5 >= w.MaxUserWatches*4:
			add(api.SeverityWarning, "watcher-limit",
				fmt.Sprintf("the folder uses %d of the %d inotify watches allowed per user (other programs use them too)", w.Directories, w.MaxUserWatches),
				fmt.Sprintf("raise the limit: sudo sysctl fs.inotify.max_user_watches=%d", nextLimit(w.Directories)))
		}
	}
	if w.Failed != "" && !limitHit {
		add(api.SeverityProblem, "watcher-failed", "the file watcher is not running ("+w.Failed+"): changes are found only by rescans",
			"see the agent's log for why the watcher stopped; `weft scan` records changes at once")
	}
	if w.OverflowRescans > 0 {
		add(api.SeverityWarning, "watcher-overflow",
			fmt.Sprintf("the watcher lost events %d times (too many changes at once) and weft rescanned the folder", w.OverflowRescans),
			"nothing is lost; if it happens often, raise fs.inotify.max_queued_events")
	}
	if fo.DiskTotalBytes > 0 {
		switch {
		case fo.DiskFreeBytes < 64<<20 || fo.DiskFreeBytes*100 < fo.DiskTotalBytes:
			add(api.SeverityProblem, "disk-full", fmt.Sprintf("the disk that holds the folder has %s free", HumanSize(fo.DiskFreeBytes)),
				"free space on it: weft cannot write incoming files")
		case fo.DiskFreeBytes*20 < fo.DiskTotalBytes:
			add(api.SeverityWarning, "disk-full", fmt.Sprintf("the disk that holds the folder is almost full: %s free", HumanSize(fo.DiskFreeBytes)),
				"free space on it before large files arrive")
		}
	}
	return out
}

// codeFindings says how doctor reports each folder error code of status,
// and what to do about it.
var codeFindings = map[string]struct{ severity, fix string }{
	api.CodeMarkerMissing:    {api.SeverityProblem, "put the real folder back (mount its drive, move it back): weft resumes by itself; if this really is the folder now, run `weft folder reset FOLDER`"},
	api.CodeMarkerForeign:    {api.SeverityProblem, "check that FOLDER is the folder this vault syncs; if it is, run `weft folder reset FOLDER`"},
	api.CodeUnreadable:       {api.SeverityProblem, "make the folder readable again (check its drive, mount and permissions); weft resumes by itself"},
	api.CodeMassDelete:       {api.SeverityProblem, "run `weft deletions` to see them, then `weft deletions accept` to let them go through or `weft deletions reject` to bring the files back"},
	api.CodeCorrupt:          {api.SeverityProblem, "check the disk (SMART, dmesg); weft writes the recorded version again from local chunks, peers or the relay, and keeps the damaged copy in .weft/corrupt/ for you to compare or delete"},
	api.CodeOwnLogForked:     {api.SeverityProblem, "give this device a new identity: stop weft here, move its home aside (keep it until the files are safe), `weft join` the vault again into the same folder with an invite from an admin (its files are scanned and synced as the new device's), then revoke the old identity on an admin (`weft revoke OLD-ID`); a forked admin asks another admin, or recovers the vault with its phrase (`weft recover`)"},
	api.CodeWatcherFailed:    {api.SeverityProblem, "see the agent's log for why the watcher stopped (the reason above); `weft scan` records changes at once, and restarting the agent starts a new watcher"},
	api.CodeWatcherLimit:     {api.SeverityProblem, "raise the system's file watch limit (the reason above says how); weft watches the rest again by itself within 10 s"},
	api.CodeHomeDiskFull:     {api.SeverityProblem, "free space on the disk that holds weft's home (see the path above; `df -h` shows it): weft resumes by itself, and nothing recorded or sent is lost meanwhile"},
	api.CodeMembershipLost:   {api.SeverityProblem, "start a device that is a member (or the relay) so this one can fetch the membership log again"},
	api.CodeMembershipForked: {api.SeverityProblem, "two admins changed the membership at once and devices now disagree about it (the reason names both changes); this version does not mend that: make the vault anew from one device (`weft init` into a new folder, move the files, invite the others) and keep membership changes to one device at a time"},
	api.CodeRevoked:          {api.SeverityProblem, "ask an admin of the vault to add this device again (`weft invite` there, `weft join` here, into a new folder); files already here stay as they are"},
	api.CodeLogUnconfirmed:   {api.SeverityWarning, "keep a member or the relay reachable: local changes are recorded once this device knows its own log is whole"},
}

// FixFor is what to do about a folder error of status with code, as
// weft doctor says it ("" for a code doctor has no advice for).
func FixFor(code string) string { return codeFindings[code].fix }

func nextLimit(dirs int) int { return max(524288, dirs*2) }

// HumanSize writes a byte count for a person: 1.5 MiB, 312 B.
func HumanSize(n int64) string {
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
func peerFindings(f Facts, p api.PeerDiagnosis, needed bool) []api.Finding {
	var out []api.Finding
	name := peerName(p.ID)
	if !p.Reachable {
		sev := api.SeverityWarning
		if needed {
			sev = api.SeverityProblem
		}
		fix := fmt.Sprintf("start `weft up` on %s; if it is running, check that this device can reach it", name)
		if len(p.Addrs) == 0 {
			fix += " (this device knows no address for it: put both on the same LAN for mDNS, or reconnect them once)"
		} else {
			fix += " at " + strings.Join(p.Addrs, " or ") + " (firewall, network)"
		}
		out = append(out, finding(sev, "peer-offline", "", "", p.ID, fmt.Sprintf("peer %s is offline (%s)", name, since(p)), fix))
		return out
	}
	if f.Path == "" {
		msg := fmt.Sprintf("peer %s is reachable (%s", name, p.Connection)
		if p.RTTMillis != nil {
			msg += fmt.Sprintf(", round trip %.1f ms", *p.RTTMillis)
		}
		msg += fmt.Sprintf(", receiving %s/s, sending %s/s)", HumanSize(int64(p.RecvBytesPerSec)), HumanSize(int64(p.SentBytesPerSec)))
		fix := "nothing"
		if p.Connection == "relayed" {
			fix = "nothing; a direct connection is faster: open an inbound port on one side or let hole punching work"
		}
		out = append(out, finding(api.SeverityInfo, "peer-reachable", "", "", p.ID, msg, fix))
	}
	return append(out, clockSkewFindings(p, f.SelfCorrection, name)...) // clock.go
}

// relayFindings explains what is wrong with a folder's relays: one that
// is unreachable, refused the vault, is full, or went back on what it
// said it held.
func relayFindings(fo FolderFacts) []api.Finding {
	var out []api.Finding
	folder := fo.Path
	for _, r := range fo.Relays {
		name := peerName(r.ID)
		switch {
		case r.Error != "":
			out = append(out, finding(api.SeverityProblem, "relay-refused", folder, "", r.ID,
				fmt.Sprintf("relay %s refused to serve this vault: %s", name, r.Error),
				"ask the relay's operator to allow the vault (weft relay --allow, --max-vaults), or remove the relay with `weft relay remove`"))
		case !r.Connected:
			sev, why := api.SeverityInfo, "devices that are offline now get this device's changes from other devices only"
			if fo.Unsafe > 0 {
				sev, why = api.SeverityWarning, fmt.Sprintf("%d entries written here are held by no other device or relay yet", fo.Unsafe)
			}
			out = append(out, finding(sev, "relay-offline", folder, "", r.ID,
				fmt.Sprintf("relay %s (%s) is not reachable: %s", name, r.Addr, why),
				"check that the relay runs and that its ports (TCP and UDP, usually 4001) are open; `weft relay list` shows the address"))
		case r.Quota != nil && r.Quota.Full:
			fix := "ask the relay's operator to raise --quota-bytes or --quota-entries; old versions it no longer retains are freed by its garbage collection"
			if i := slices.IndexFunc(fo.Coded, func(e api.PathMessage) bool { return e.Code == api.CodeRelayFull && e.Peer == r.ID }); i >= 0 {
				// It lacks entries this device holds: they do not reach it.
				out = append(out, finding(api.SeverityProblem, "relay-full", folder, "", r.ID, fo.Coded[i].Reason, fix))
				continue
			}
			out = append(out, finding(api.SeverityWarning, "relay-full", folder, "", r.ID,
				fmt.Sprintf("relay %s has reached its quota for this vault (%s of %s, %d of %d entries): it keeps what it has and takes nothing new",
					name, HumanSize(int64(r.Quota.Bytes)), LimitSize(r.Quota.BytesLimit), r.Quota.Entries, r.Quota.EntriesLimit), fix))
		}
	}
	for _, rb := range fo.Rollbacks {
		out = append(out, finding(api.SeverityWarning, "relay-rollback", folder, "", rb.Relay,
			rb.Message+" (at "+rb.At.UTC().Format(time.RFC3339)+")",
			"its earlier acknowledgements no longer count as safe; keep another device or relay holding your data, and ask the relay's operator whether it was restored from a backup or is faulty"))
	}
	return out
}

// LimitSize shows a quota limit; 0 is none.
func LimitSize(n uint64) string {
	if n == 0 {
		return "no limit"
	}
	return HumanSize(int64(n))
}

// finding makes a Finding from its fields in order.
func finding(severity, kind, folder, path, peer, message, fix string) api.Finding {
	return api.Finding{Severity: severity, Kind: kind, Folder: folder, Path: path, Peer: peer, Message: message, Fix: fix}
}
