package ui

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	qrcode "github.com/skip2/go-qrcode"
	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/keys"
)

// fakeBackend answers the calls the UI makes; any other panics (the
// embedded nil interface).
type fakeBackend struct {
	api.Backend
	mu       sync.Mutex
	resolved []api.ResolveRequest
	bus      *api.Bus
	invites  []inviteCall
	decided  []string
	restores []api.RestoreRequest
	taken    []string      // contents of the files Resolve took
	conflict *api.Conflict // what Conflicts returns, when set
}

func (f *fakeBackend) History(path string) (api.History, error) {
	if path != "/home/a/notes/todo.md" {
		return api.History{}, fmt.Errorf("%s is not in a synced folder", path)
	}
	t0 := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	return api.History{Folder: "/home/a/notes", Path: "todo.md", Versions: []api.HistoryVersion{
		{ID: "ZyXwVuTs/4/0", Time: t0.Add(time.Hour), AuthorShort: "ZyXwVuTs", AuthorName: "laptop", Kind: "file", Size: 12, State: "current", OnDisk: true, Content: "local"},
		{ID: "AbCdEfGh/2/0", Time: t0, AuthorShort: "AbCdEfGh", Self: true, Kind: "file", Size: 10, State: "superseded", Content: "versions"},
		{ID: "AbCdEfGh/1/0", Time: t0.Add(-time.Hour), AuthorShort: "AbCdEfGh", Self: true, Kind: "file", Size: 9000, State: "superseded", Content: "none"},
	}}, nil
}

func (f *fakeBackend) Restore(_ context.Context, req api.RestoreRequest) (api.RestoreResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restores = append(f.restores, req)
	res := api.RestoreResult{DryRun: req.DryRun, Changes: []api.RestoreChange{{Folder: "/home/a/notes", Path: "todo.md", Action: "restore", From: req.Version, Kind: "file", Size: 10, Content: "versions"}}}
	if req.At != "" {
		at := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC) // "-2h", resolved by the agent
		res.At = &at
	}
	if req.All {
		res.Changes = append(res.Changes, api.RestoreChange{Folder: "/home/a/notes", Path: "new.md", Action: "delete"})
		res.Failed = []api.RestoreFailure{{Folder: "/home/a/notes", Path: "big.bin", Code: "unavailable", Reason: "no device holds it"}}
	}
	return res, nil
}

type inviteCall struct {
	ttl     time.Duration
	confirm bool
}

func (f *fakeBackend) Invite(_ keys.VaultID, ttl time.Duration, confirm bool) (api.InviteResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.invites = append(f.invites, inviteCall{ttl, confirm})
	return api.InviteResponse{Code: "weft1abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnop", Expires: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)}, nil
}

func (f *fakeBackend) WaitingJoins() []api.WaitingJoin {
	return []api.WaitingJoin{{Folder: "/home/a/notes", Device: "12D3KooWPhoNe123XYZ", Name: "phone", Words: "apple river stone moon", Since: time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)}}
}

func (f *fakeBackend) DecideJoin(req api.JoinDecision, approve bool) (api.WaitingJoin, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.decided = append(f.decided, fmt.Sprintf("%s %v", req.Device, approve))
	return api.WaitingJoin{Folder: "/home/a/notes", Device: req.Device, Name: "phone"}, nil
}

func (f *fakeBackend) EventCursor(after uint64) *api.Cursor {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bus == nil {
		f.bus = api.NewBus()
	}
	return f.bus.Cursor(after)
}

func (f *fakeBackend) Relays() []api.RelayInfo {
	return []api.RelayInfo{{Folder: "/home/a/notes", Addr: "/dns4/relay.example/tcp/4001/p2p/12D3KooWrelay", Connected: true, Holds: 42,
		Quota: &api.RelayQuota{Bytes: 5 << 20, BytesLimit: 1 << 30, Entries: 42, Full: false}}}
}

func (f *fakeBackend) Status() api.Status {
	seen := time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC)
	return api.Status{Device: "12D3KooWself", Peers: []api.PeerStatus{{ID: "12D3KooWother", Name: "laptop", Role: "device", Connection: "lan", InSync: true, LastSeen: &seen, BytesReceived: 3 << 20, RecvBytesPerSec: 2 << 20}}, Folders: []api.FolderStatus{{Path: "/home/a/notes", State: "error", Files: 3, Bytes: 2048,
		Errors: []api.PathMessage{{Code: "not-mounted", Reason: "the folder <is> not mounted"}, {Code: api.CodeHomeDiskFull, Reason: "home full"}}}}}
}

func (f *fakeBackend) Conflicts() []api.Conflict {
	if f.conflict != nil {
		return []api.Conflict{*f.conflict}
	}
	return []api.Conflict{{Folder: "/home/a/notes", Path: "todo.conflict-AbCdEfGh-20261130-054657-1a2b3c.md", Of: "todo.md",
		Copy:   api.ConflictSide{Short: "AbCdEfGh", Name: "laptop", MTime: time.Date(2026, 11, 30, 5, 46, 57, 0, time.UTC), Size: 10},
		Winner: &api.ConflictSide{Short: "ZyXwVuTs", MTime: time.Date(2026, 11, 30, 5, 47, 0, 0, time.UTC), Size: 12}}}
}

func (f *fakeBackend) Resolve(_ context.Context, req api.ResolveRequest) (api.ResolveResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Take != "" {
		b, err := os.ReadFile(req.Take)
		if err != nil {
			return api.ResolveResult{}, err
		}
		f.taken = append(f.taken, string(b))
	}
	f.resolved = append(f.resolved, req)
	return api.ResolveResult{Folder: "/home/a/notes", Copy: "c", Of: "todo.md", Kept: req.Keep}, nil
}

// client is a browser: cookies kept, redirects followed.
func client(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestLoginOnce: a page without a session asks to log in; a login code
// starts a session once, and not again; an unknown code does nothing.
func TestLoginOnce(t *testing.T) {
	l := NewLogins(nil)
	srv := httptest.NewServer(Handler(&fakeBackend{}, l))
	defer srv.Close()
	c := client(t)
	if code, body := get(t, c, srv.URL+"/ui/"); code != http.StatusUnauthorized || !strings.Contains(body, "weft ui") {
		t.Fatalf("no session: %d %q", code, body)
	}
	code := l.NewCode()
	status, body := get(t, c, srv.URL+"/ui/login?code="+code)
	if status != http.StatusOK || !strings.Contains(body, "/home/a/notes") || !strings.Contains(body, "not-mounted") {
		t.Fatalf("after login: %d %q, want the folders page", status, body)
	}
	if !strings.Contains(body, "the folder &lt;is&gt; not mounted") {
		t.Error("a reason was not escaped")
	}
	if !strings.Contains(body, "What to do:</strong> free space on the disk that holds weft") {
		t.Errorf("a folder error without what to do about it:\n%s", body)
	}
	if status, body := get(t, c, srv.URL+"/ui/devices"); status != http.StatusOK || !strings.Contains(body, "laptop") || !strings.Contains(body, "lan") || !strings.Contains(body, "3.0 MiB") || !strings.Contains(body, "2.0 MiB/s / 0 B/s over the last minute") {
		t.Errorf("devices page: %d %q", status, body)
	}
	other := client(t)
	if status, _ := get(t, other, srv.URL+"/ui/login?code="+code); status != http.StatusUnauthorized {
		t.Errorf("a code used twice: %d, want 401", status)
	}
	if status, _ := get(t, other, srv.URL+"/ui/"); status != http.StatusUnauthorized {
		t.Errorf("the second browser got in: %d", status)
	}
	if status, _ := get(t, other, srv.URL+"/ui/login?code=nope"); status != http.StatusUnauthorized {
		t.Errorf("an unknown code: %d", status)
	}
}

// TestCodeAndSessionExpire: a code older than CodeTTL and a session older
// than SessionTTL are refused.
func TestCodeAndSessionExpire(t *testing.T) {
	now := time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC)
	l := NewLogins(func() time.Time { return now })
	code := l.NewCode()
	now = now.Add(CodeTTL + time.Second)
	if _, ok := l.Login(code); ok {
		t.Error("an expired code logged in")
	}
	s, ok := l.Login(l.NewCode())
	if !ok || !l.Valid(s) {
		t.Fatal("a fresh code did not log in")
	}
	now = now.Add(SessionTTL + time.Second)
	if l.Valid(s) {
		t.Error("an expired session is valid")
	}
}

// TestResolveFormIsSameOriginOnly: the conflicts page offers the
// choices with the session's form token; a post without it, or from
// another origin, is refused and changes nothing; a post from the page is
// carried out and the page says so.
func TestResolveFormIsSameOriginOnly(t *testing.T) {
	b := &fakeBackend{}
	srv, c := loggedIn(t, b)
	status, page := get(t, c, srv.URL+"/ui/conflicts")
	if status != http.StatusOK || !strings.Contains(page, "laptop (AbCdEfGh)") || !strings.Contains(page, "Keep the copy") {
		t.Fatalf("conflicts page: %d %q", status, page)
	}
	i := strings.Index(page, `name="token" value="`)
	if i < 0 {
		t.Fatal("no form token on the page")
	}
	tok := page[i+len(`name="token" value="`):]
	tok = tok[:strings.IndexByte(tok, '"')]
	post := func(origin string, form url.Values) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/ui/resolve", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	form := url.Values{"path": {"/home/a/notes/todo.conflict-AbCdEfGh-20261130-054657-1a2b3c.md"}, "keep": {"copy"}}
	if status, _ := post(srv.URL, form); status != http.StatusForbidden {
		t.Errorf("no token: %d, want 403", status)
	}
	form.Set("token", tok)
	if status, _ := post("http://evil.example", form); status != http.StatusForbidden {
		t.Errorf("another origin: %d, want 403", status)
	}
	if status, _ := post("", form); status != http.StatusForbidden {
		t.Errorf("no origin or referer: %d, want 403", status)
	}
	if len(b.resolved) != 0 {
		t.Fatalf("refused posts resolved %v", b.resolved)
	}
	status, body := post(srv.URL, form)
	if status != http.StatusOK || !strings.Contains(body, "The copy&#39;s content is now todo.md") {
		t.Fatalf("from the page: %d %q", status, body)
	}
	if len(b.resolved) != 1 || b.resolved[0].Keep != "copy" || b.resolved[0].Path != form.Get("path") {
		t.Errorf("resolved %+v", b.resolved)
	}
}

// TestActivityAndRelaysPages: the activity page lists the latest events
// newest first, in words, without the log's bookkeeping unless asked for
// every event, escaped, and reloads itself unless paused; the relays page
// shows each relay's connection, holdings and quota.
func TestActivityAndRelaysPages(t *testing.T) {
	b := &fakeBackend{bus: api.NewBus()}
	srv, c := loggedIn(t, b)
	if _, body := get(t, c, srv.URL+"/ui/activity"); !strings.Contains(body, "Nothing has happened") {
		t.Fatalf("activity of a quiet agent: %q", body)
	}
	b.bus.Publish(api.Event{Type: api.EventScanned, Folder: "/home/a/notes", Count: 3})
	b.bus.Publish(api.Event{Type: api.EventEntryWritten, Folder: "/home/a/notes", Seq: 7})
	b.bus.Publish(api.Event{Type: api.EventApplied, Folder: "/home/a/notes", Path: "old.md", Kind: "deletion", Peer: "12D3KooWAbCdEfGhXYZ"})
	b.bus.Publish(api.Event{Type: api.EventPeerConnected, Peer: "12D3KooWother", Kind: "lan"})
	b.bus.Publish(api.Event{Type: api.EventLocalChange, Folder: "/home/a/notes", Path: "new.md", Kind: "added"})
	b.bus.Publish(api.Event{Type: api.EventError, Folder: "/home/a/notes", Path: "x.md", Error: "<script>boom</script>"})
	status, body := get(t, c, srv.URL+"/ui/activity")
	if status != http.StatusOK {
		t.Fatalf("activity: %d", status)
	}
	iErr, iDel, iScan := strings.Index(body, "x.md"), strings.Index(body, "deleted (by another device)"), strings.Index(body, "3 changes")
	if iErr < 0 || iDel < 0 || iScan < 0 || !(iErr < iDel && iDel < iScan) {
		t.Fatalf("want the error, the deletion and the scan, newest first (at %d, %d, %d):\n%s", iErr, iDel, iScan, body)
	}
	if !strings.Contains(body, "AbCdEfGh") || strings.Contains(body, "entry written") {
		t.Errorf("want the peer's short ID and no bookkeeping:\n%s", body)
	}
	if !strings.Contains(body, "added here") || !strings.Contains(body, "<td>laptop</td>") {
		t.Errorf("want the local change in words and a connected device by its name from the status:\n%s", body)
	}
	if strings.Contains(body, "<script>") || !strings.Contains(body, "&lt;script&gt;boom") {
		t.Error("an event's error was not escaped")
	}
	if !strings.Contains(body, `http-equiv="refresh"`) {
		t.Error("the activity page does not reload itself")
	}
	_, body = get(t, c, srv.URL+"/ui/activity?all=1&pause=1")
	if !strings.Contains(body, "entry written") || strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("every event, paused: want the bookkeeping and no reload:\n%s", body)
	}
	status, body = get(t, c, srv.URL+"/ui/relays")
	if status != http.StatusOK || !strings.Contains(body, "relay.example") || !strings.Contains(body, "5.0 MiB of 1.0 GiB") || !strings.Contains(body, "42") {
		t.Fatalf("relays page: %d %q", status, body)
	}
}

// postForm posts form to path as the UI's own page would (its origin),
// without following the redirect.
func postForm(t *testing.T, c *http.Client, base, path string, form url.Values) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	noRedirect := *c
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

// formToken finds the session's form token on a page.
func formToken(t *testing.T, page string) string {
	t.Helper()
	i := strings.Index(page, `name="token" value="`)
	if i < 0 {
		t.Fatal("no form token on the page")
	}
	tok := page[i+len(`name="token" value="`):]
	return tok[:strings.IndexByte(tok, '"')]
}

// TestPairingPage: the pairing page makes an invite only from its own
// form, shows the code once with a QR code of exactly that code (and
// never puts it in a URL), and approves or denies a waiting join, shown
// with its words.
func TestPairingPage(t *testing.T) {
	b := &fakeBackend{bus: api.NewBus()}
	srv, c := loggedIn(t, b)
	status, page := get(t, c, srv.URL+"/ui/pairing")
	if status != http.StatusOK || !strings.Contains(page, "apple river stone moon") || !strings.Contains(page, "phone") || !strings.Contains(page, "Create invite") {
		t.Fatalf("pairing page: %d %q", status, page)
	}
	tok := formToken(t, page)
	if status, _, _ := postForm(t, c, srv.URL, "/ui/invite", url.Values{"confirm": {"1"}, "ttl": {"1h"}}); status != http.StatusForbidden || len(b.invites) != 0 {
		t.Fatalf("an invite without the form token: %d, %d invites made", status, len(b.invites))
	}
	status, loc, body := postForm(t, c, srv.URL, "/ui/invite", url.Values{"token": {tok}, "confirm": {"1"}, "ttl": {"1h"}})
	if status != http.StatusOK || loc != "" {
		t.Fatalf("invite: %d, redirect %q: the code must come in the answer", status, loc)
	}
	if len(b.invites) != 1 || !b.invites[0].confirm || b.invites[0].ttl != time.Hour {
		t.Fatalf("invites made: %+v, want one with approval, for 1h", b.invites)
	}
	const code = "weft1abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnop"
	if !strings.Contains(body, code) || !strings.Contains(body, "compare the words") {
		t.Fatalf("the invite's page lacks the code or the approval note:\n%s", body)
	}
	got := svgModules(t, body)
	q, err := qrcode.New(strings.ToUpper(code), qrcode.Medium)
	if err != nil {
		t.Fatal(err)
	}
	q.DisableBorder = true
	want := q.Bitmap()
	if len(got) != len(want) {
		t.Fatalf("the QR code is %d modules wide, want %d", len(got), len(want))
	}
	for y := range want {
		if !slices.Equal(got[y], want[y]) {
			t.Fatalf("row %d of the QR code differs from the code's", y)
		}
	}

	if status, _, _ := postForm(t, c, srv.URL, "/ui/joins", url.Values{"device": {"12D3KooWPhoNe123XYZ"}, "decision": {"approve"}}); status != http.StatusForbidden || len(b.decided) != 0 {
		t.Fatalf("an approval without the form token: %d, decided %v", status, b.decided)
	}
	status, loc, _ = postForm(t, c, srv.URL, "/ui/joins", url.Values{"token": {tok}, "device": {"12D3KooWPhoNe123XYZ"}, "decision": {"approve"}})
	if status != http.StatusSeeOther || !strings.Contains(loc, "Approved") || len(b.decided) != 1 || b.decided[0] != "12D3KooWPhoNe123XYZ true" {
		t.Fatalf("approve: %d %q, decided %v", status, loc, b.decided)
	}
	if _, _, _ = postForm(t, c, srv.URL, "/ui/joins", url.Values{"token": {tok}, "device": {"12D3KooWPhoNe123XYZ"}, "decision": {"deny"}}); b.decided[1] != "12D3KooWPhoNe123XYZ false" {
		t.Fatalf("deny: decided %v", b.decided)
	}
}

// svgModules reads the QR code's dark modules back from the page's
// inline SVG (rectangles of height 1 inside a 4-module quiet zone).
func svgModules(t *testing.T, page string) [][]bool {
	t.Helper()
	i := strings.Index(page, `<svg`)
	j := strings.Index(page, `</svg>`)
	if i < 0 || j < 0 {
		t.Fatal("no inline SVG on the page")
	}
	svg := page[i:j]
	var n int
	if _, err := fmt.Sscanf(svg[strings.Index(svg, `viewBox="`):], `viewBox="0 0 %d`, &n); err != nil {
		t.Fatal(err)
	}
	size := n - 8
	out := make([][]bool, size)
	for y := range out {
		out[y] = make([]bool, size)
	}
	for _, part := range strings.Split(svg, `<rect x="`)[1:] {
		var x, y, w int
		if _, err := fmt.Sscanf(part, `%d" y="%d" width="%d"`, &x, &y, &w); err != nil {
			t.Fatal(err)
		}
		for k := range w {
			out[y-4][x-4+k] = true
		}
	}
	return out
}

// TestHistoryAndRestorePages: a file's history offers to restore the
// versions that can be; a restore is previewed first (a dry run, nothing
// done) and carried out only from the preview's own form; a folder's
// point-in-time restore shows what would be deleted and what cannot be
// restored, and offers a partial restore.
func TestHistoryAndRestorePages(t *testing.T) {
	b := &fakeBackend{bus: api.NewBus()}
	srv, c := loggedIn(t, b)
	status, page := get(t, c, srv.URL+"/ui/history?path=/home/a/notes/todo.md")
	if status != http.StatusOK || !strings.Contains(page, "laptop") || !strings.Contains(page, "this device") {
		t.Fatalf("history: %d %q", status, page)
	}
	if n := strings.Count(page, "Restore this"); n != 1 {
		t.Fatalf("%d restore buttons, want 1 (not the version on disk, not one whose content is nowhere):\n%s", n, page)
	}
	if _, page := get(t, c, srv.URL+"/ui/history?path=/elsewhere"); !strings.Contains(page, "not in a synced folder") {
		t.Errorf("a path outside the folders: want the error on the page")
	}
	tok := formToken(t, page)
	if status, _, _ := postForm(t, c, srv.URL, "/ui/restore", url.Values{"path": {"/home/a/notes/todo.md"}, "version": {"AbCdEfGh/2/0"}}); status != http.StatusForbidden || len(b.restores) != 0 {
		t.Fatalf("a restore without the form token: %d, %d restores", status, len(b.restores))
	}
	status, _, body := postForm(t, c, srv.URL, "/ui/restore", url.Values{"token": {tok}, "path": {"/home/a/notes/todo.md"}, "version": {"AbCdEfGh/2/0"}, "preview": {"1"}})
	if status != http.StatusOK || len(b.restores) != 1 || !b.restores[0].DryRun || !strings.Contains(body, "Nothing has changed yet") || !strings.Contains(body, "Restore now") {
		t.Fatalf("preview: %d, restores %+v:\n%s", status, b.restores, body)
	}
	// The preview's own form carries the restore out.
	form := url.Values{"token": {formToken(t, body)}}
	for _, name := range []string{"path", "version"} {
		i := strings.Index(body, `name="`+name+`" value="`)
		v := body[i+len(`name="`+name+`" value="`):]
		form.Set(name, v[:strings.IndexByte(v, '"')])
	}
	status, loc, _ := postForm(t, c, srv.URL, "/ui/restore", form)
	if status != http.StatusSeeOther || !strings.Contains(loc, "Restored+1+path") || len(b.restores) != 2 || b.restores[1].DryRun || b.restores[1].Version != "AbCdEfGh/2/0" {
		t.Fatalf("restore: %d %q, restores %+v", status, loc, b.restores)
	}

	status, _, body = postForm(t, c, srv.URL, "/ui/restore", url.Values{"token": {tok}, "path": {"/home/a/notes"}, "all": {"1"}, "at": {"-2h"}, "preview": {"1"}})
	if status != http.StatusOK || !b.restores[2].All || b.restores[2].At != "-2h" || !b.restores[2].DryRun {
		t.Fatalf("folder preview: %d, request %+v", status, b.restores[2])
	}
	for _, want := range []string{"new.md", "deleted", "big.bin", "unavailable", "Restore what can be", `name="at" value="2026-12-07T06:00:00Z"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the folder's preview lacks %q:\n%s", want, body)
		}
	}
}

// TestCompareAndMerge: a text conflict is shown side by side, with a
// draft merge holding both sides of each difference between markers; a
// merge posted with the markers still in it is refused; one without them
// becomes the file's content through resolve's take (the agent reads a
// private temporary file, gone afterwards).
func TestCompareAndMerge(t *testing.T) {
	dir := t.TempDir()
	copyName := "todo.conflict-AbCdEfGh-20261130-054657-1a2b3c.md"
	if err := os.WriteFile(filepath.Join(dir, "todo.md"), []byte("milk\neggs on the desk\nbread\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, copyName), []byte("milk\neggs on the laptop\nbread\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &fakeBackend{conflict: &api.Conflict{Folder: dir, Path: copyName, Of: "todo.md", Copy: api.ConflictSide{Short: "AbCdEfGh"}}}
	srv, c := loggedIn(t, b)
	_, page := get(t, c, srv.URL+"/ui/conflicts")
	for _, want := range []string{
		`<td class="old"><pre>eggs on the desk`, `<td class="new"><pre>eggs on the laptop`,
		markName + "\neggs on the desk\n" + markMid + "\neggs on the laptop\n" + markCopy,
	} {
		if !strings.Contains(page, html.EscapeString(want)) && !strings.Contains(page, want) {
			t.Fatalf("the conflicts page lacks %q:\n%s", want, page)
		}
	}
	tok, sides := formToken(t, page), hiddenValue(t, page, "sides")
	abs := filepath.Join(dir, copyName)
	if status, _, _ := postForm(t, c, srv.URL, "/ui/merge", url.Values{"path": {abs}, "sides": {sides}, "text": {"x\n"}}); status != http.StatusForbidden {
		t.Fatalf("a merge without the form token: %d, want 403", status)
	}
	_, loc, _ := postForm(t, c, srv.URL, "/ui/merge", url.Values{"token": {tok}, "path": {abs}, "sides": {sides}, "text": {"milk\r\n" + markName + "\r\neggs\r\n"}})
	if !strings.Contains(loc, "conflict+markers") || len(b.resolved) != 0 {
		t.Fatalf("a merge with markers: redirect %q, resolved %v", loc, b.resolved)
	}
	// The copy changes after the page showed it: the merge is refused.
	if err := os.WriteFile(filepath.Join(dir, copyName), []byte("milk\neggs on the laptop, again\nbread\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, loc, _ = postForm(t, c, srv.URL, "/ui/merge", url.Values{"token": {tok}, "path": {abs}, "sides": {sides}, "text": {"milk\r\neggs on both\r\nbread\r\n"}})
	if !strings.Contains(loc, "changed+since") || len(b.resolved) != 0 {
		t.Fatalf("a merge over a changed copy: redirect %q, resolved %v", loc, b.resolved)
	}
	_, page = get(t, c, srv.URL+"/ui/conflicts")
	sides = hiddenValue(t, page, "sides")
	_, loc, _ = postForm(t, c, srv.URL, "/ui/merge", url.Values{"token": {tok}, "path": {abs}, "sides": {sides}, "text": {"milk\r\neggs on both\r\nbread\r\n"}})
	if !strings.Contains(loc, "Your+merge") || len(b.taken) != 1 || b.taken[0] != "milk\neggs on both\nbread\n" || b.resolved[0].Path != abs {
		t.Fatalf("a merge: redirect %q, taken %q, resolved %+v", loc, b.taken, b.resolved)
	}
	if _, err := os.Stat(b.resolved[0].Take); !os.IsNotExist(err) {
		t.Errorf("the merge's temporary file is still there: %v", err)
	}

	// Both sides with CRLF line ends: so is the merge taken.
	for _, f := range []struct{ name, text string }{{"todo.md", "milk\r\nA\r\n"}, {copyName, "milk\r\nB\r\n"}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, page = get(t, c, srv.URL+"/ui/conflicts")
	if hiddenValue(t, page, "crlf") != "1" {
		t.Fatal("CRLF sides: no crlf field on the page")
	}
	postForm(t, c, srv.URL, "/ui/merge", url.Values{"token": {tok}, "path": {abs}, "sides": {hiddenValue(t, page, "sides")}, "crlf": {"1"}, "text": {"milk\r\nA and B\r\n"}})
	if len(b.taken) != 2 || b.taken[1] != "milk\r\nA and B\r\n" {
		t.Fatalf("a merge of CRLF sides took %q", b.taken)
	}

	// A binary side is not compared, and says why.
	if err := os.WriteFile(filepath.Join(dir, copyName), []byte{0, 1, 2}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, page := get(t, c, srv.URL+"/ui/conflicts"); !strings.Contains(page, "Not compared: not text") {
		t.Errorf("a binary copy: want it said not compared:\n%s", page)
	}
}

// hiddenValue finds the value of the first hidden field called name.
func hiddenValue(t *testing.T, page, name string) string {
	t.Helper()
	i := strings.Index(page, `name="`+name+`" value="`)
	if i < 0 {
		t.Fatalf("no field %s on the page", name)
	}
	v := page[i+len(`name="`+name+`" value="`):]
	return v[:strings.IndexByte(v, '"')]
}

// loggedIn serves the UI over b and returns a browser logged in to it.
func loggedIn(t *testing.T, b *fakeBackend) (*httptest.Server, *http.Client) {
	t.Helper()
	l := NewLogins(nil)
	srv := httptest.NewServer(Handler(b, l))
	t.Cleanup(srv.Close)
	c := client(t)
	get(t, c, srv.URL+"/ui/login?code="+l.NewCode())
	return srv, c
}
