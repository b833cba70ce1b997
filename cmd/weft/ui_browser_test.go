package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/weftsync/weft/node/api"
)

// browser starts a headless Chromium for the test (Debian's `chromium`,
// which .ci/run installs). Without one the test is skipped, except in CI,
// where that is a failure.
func browser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no chromium: .ci/run installs Debian's chromium package")
		}
		t.Skip("no chromium on this machine (apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1200, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTime(); cancel(); cancelAlloc() })
	return ctx
}

// screenshot saves the page to the test's artifact directory as name.png
// and fails the test when it is blank: a page that did not render is one
// colour, or a handful.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot of %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("screenshot of %s: %v", name, err)
	}
	colours := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(colours) < 8 {
		t.Fatalf("the %s page looks blank: %d colours in its screenshot", name, len(colours))
	}
}

// visit opens u and returns the page's text once its heading shows.
func visit(t *testing.T, ctx context.Context, u string) string {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS("h1"))); err != nil {
		t.Fatalf("opening %s: %v", u, err)
	}
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestUIInABrowser: two named devices with a conflict; a browser logs in
// to a's UI through `weft ui`'s link, sees its folder and both devices by
// name, and keeps both sides of the conflict; both folders end with the
// note and the kept copy as ordinary files. Each page is screenshotted
// into the test's artifact directory.
func TestUIInABrowser(t *testing.T) {
	ctx := browser(t)
	a, b := newDevice(t, "a"), newDevice(t, "b")
	a.must("init", a.folder, "--name", "desk")
	a.up()
	b.must("join", lastLine(a.must("invite")), b.folder, "--name", "laptop")
	b.up()
	a.write("note.md", []byte("one\ntwo\nthree\n"))
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["note.md"] == "" {
			return fmt.Errorf("note.md not synced")
		}
		return nil
	})
	waitInSync(t, a, b)
	b.stop()
	a.write("note.md", []byte("one\ntwo on the desk\nthree\n"))
	b.write("note.md", []byte("one\ntwo on the laptop\nthree\n"))
	a.must("scan")
	b.up()
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		for p := range m {
			if strings.Contains(p, ".conflict-") {
				return nil
			}
		}
		return fmt.Errorf("no conflict copy yet")
	})

	// Whichever device wrote the copy said so in its log.
	var logs string
	for _, d := range []*device{a, b} {
		l, _ := os.ReadFile(filepath.Join(filepath.Dir(d.home), d.name+".log"))
		logs += string(l)
	}
	if !strings.Contains(logs, `msg="conflict: both versions kept`) {
		t.Error("no device logged the conflict")
	}

	link := strings.TrimSpace(a.must("ui", "--print-url"))
	base := link[:strings.Index(link, "/ui/")]
	body := visit(t, ctx, link)
	if !strings.Contains(body, a.folder) {
		t.Fatalf("the folders page does not name %s:\n%s", a.folder, body)
	}
	screenshot(t, ctx, "folders")

	if body = visit(t, ctx, base+"/ui/devices"); !strings.Contains(body, "desk") || !strings.Contains(body, "laptop") {
		t.Fatalf("the devices page does not name both devices:\n%s", body)
	}
	screenshot(t, ctx, "devices")

	// The text conflict side by side: each device's line on its side.
	if body = visit(t, ctx, base+"/ui/conflicts"); !strings.Contains(body, "two on the desk") || !strings.Contains(body, "two on the laptop") || !strings.Contains(body, "Take this merge") {
		t.Fatalf("the conflicts page does not show both sides and the merge box:\n%s", body)
	}
	screenshot(t, ctx, "conflicts")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.Search(`//button[text()="Keep both"]`)), chromedp.WaitNotPresent(chromedp.Search(`//button[text()="Keep both"]`))); err != nil {
		t.Fatal(err)
	}
	if body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body"))); err != nil || !strings.Contains(body, "Kept both") {
		t.Fatalf("after keep both: %q, %v", body, err)
	}
	screenshot(t, ctx, "resolved")
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		var names []string
		for p := range m {
			if strings.Contains(p, ".conflict-") {
				return fmt.Errorf("a conflict copy remains: %s", p)
			}
			names = append(names, p)
		}
		if len(names) != 2 || m["note.md"] == "" {
			return fmt.Errorf("files %v, want note.md and the kept copy", names)
		}
		return nil
	})
	// The activity page tells the story from the agent's events: the
	// other device by name, and the conflict copy (written here, or
	// received when the laptop's resolution came first).
	if body = visit(t, ctx, base+"/ui/activity?pause=1"); !strings.Contains(body, "laptop") || !strings.Contains(body, ".conflict-") {
		t.Fatalf("the activity page does not show the conflict and the other device:\n%s", body)
	}
	screenshot(t, ctx, "activity")
	if body = visit(t, ctx, base+"/ui/relays"); !strings.Contains(body, "No relay") {
		t.Fatalf("the relays page of a vault without one:\n%s", body)
	}
	screenshot(t, ctx, "relays")
	// Pairing: an invite made from the page comes with its code and a QR
	// code drawn inline (the CSP allows no image source).
	visit(t, ctx, base+"/ui/pairing")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.Search(`//button[text()="Create invite"]`)), chromedp.WaitVisible(chromedp.CSS("svg.qr"))); err != nil {
		t.Fatal(err)
	}
	code, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("code.code")))
	if err != nil || !strings.HasPrefix(strings.TrimSpace(code), "weft1") {
		t.Fatalf("the invite's code on the page: %q, %v", code, err)
	}
	screenshot(t, ctx, "pairing")
	// History: the note's first version, previewed and then restored from
	// the preview, comes back on both devices.
	visit(t, ctx, base+"/ui/history?path="+url.QueryEscape(filepath.Join(a.folder, "note.md")))
	screenshot(t, ctx, "history")
	oldest := `(//button[text()="Restore this…"])[last()]`
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.Search(oldest)), chromedp.WaitVisible(chromedp.Search(`//button[text()="Restore now"]`))); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "restore-preview")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.Search(`//button[text()="Restore now"]`)), chromedp.WaitNotPresent(chromedp.Search(`//button[text()="Restore now"]`))); err != nil {
		t.Fatal(err)
	}
	if body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body"))); err != nil || !strings.Contains(body, "Restored 1 path") {
		t.Fatalf("after restore now: %q, %v", body, err)
	}
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["note.md"] != "file:one\ntwo\nthree\n" {
			return fmt.Errorf("note.md is %q, want its first version back", m["note.md"])
		}
		return nil
	})

	// Pairing, continued: a third device joins with the code the page
	// made; its join waits, shows on the page with its words, and is
	// approved there.
	c := newDevice(t, "c")
	joined := make(chan error, 1)
	go func() {
		_, err := c.run("join", strings.TrimSpace(code), c.folder, "--name", "phone")
		joined <- err
	}()
	waitPage(t, ctx, base+"/ui/pairing", "phone")
	screenshot(t, ctx, "join-waiting")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.Search(`//button[text()="Approve"]`)), chromedp.WaitVisible(chromedp.Search(`//p[contains(., "Approved")]`))); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-joined:
		if err != nil {
			t.Fatalf("the join approved on the page: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the join did not end a minute after its approval")
	}
	c.up()
	waitSame(t, a, c, time.Minute, func(m map[string]string) error {
		if m["note.md"] == "" {
			return fmt.Errorf("the new device has no note.md yet")
		}
		return nil
	})

	// A second conflict, settled with "Keep what holds the name": the
	// copy goes everywhere and the name keeps its content.
	b.stop()
	c.stop()
	a.write("list.md", []byte("milk\nthe desk's eggs\n"))
	b.write("list.md", []byte("milk\nthe laptop's eggs\n"))
	a.must("scan")
	b.up()
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		for p := range m {
			if strings.HasPrefix(p, "list.conflict-") {
				return nil
			}
		}
		return fmt.Errorf("no conflict copy of list.md yet")
	})
	visit(t, ctx, base+"/ui/conflicts")
	held := `(//h2[contains(., "list.conflict-")]/following::button[text()="Keep what holds the name"])[1]`
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.Search(held)), chromedp.WaitVisible(chromedp.Search(`//p[contains(., "kept as it was")]`))); err != nil {
		t.Fatal(err)
	}
	kept := waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		for p := range m {
			if strings.HasPrefix(p, "list.conflict-") {
				return fmt.Errorf("the copy %s is still there", p)
			}
		}
		return nil
	})["list.md"]
	if kept != "file:milk\nthe desk's eggs\n" && kept != "file:milk\nthe laptop's eggs\n" {
		t.Fatalf("list.md after keeping what held the name: %q", kept)
	}

	// A deleted file comes back from its history.
	a.write("gone.md", []byte("keep me\n"))
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["gone.md"] == "" {
			return fmt.Errorf("gone.md not synced")
		}
		return nil
	})
	if err := os.Remove(filepath.Join(a.folder, "gone.md")); err != nil {
		t.Fatal(err)
	}
	a.must("scan")
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["gone.md"] != "" {
			return fmt.Errorf("gone.md not deleted everywhere yet")
		}
		return nil
	})
	visit(t, ctx, base+"/ui/history?path="+url.QueryEscape(filepath.Join(a.folder, "gone.md")))
	restore(t, ctx, `(//tr[td[text()="file"]]//button[text()="Restore this…"])[1]`, "Restored 1 path")
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["gone.md"] != "file:keep me\n" {
			return fmt.Errorf("gone.md is %q, want it back", m["gone.md"])
		}
		return nil
	})

	// A point-in-time restore of the folder, previewed first: a file made
	// after the moment is deleted again.
	// The moment is the time of gone.md's restore: a's log clock gives
	// later.md a later time.
	var hist api.History
	if err := json.Unmarshal([]byte(a.must("history", "--json", filepath.Join(a.folder, "gone.md"))), &hist); err != nil || len(hist.Versions) == 0 {
		t.Fatalf("gone.md's history: %v", err)
	}
	moment := hist.Versions[0].Time.UTC().Format(time.RFC3339Nano)
	a.write("later.md", []byte("made after the moment\n"))
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["later.md"] == "" {
			return fmt.Errorf("later.md not synced")
		}
		return nil
	})
	visit(t, ctx, base+"/ui/history")
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`input[name="at"]`), moment), chromedp.Click(chromedp.Search(`//button[text()="Preview"]`)),
		chromedp.WaitVisible(chromedp.Search(`//button[text()="Restore now"]`))); err != nil {
		t.Fatal(err)
	}
	if body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body"))); err != nil || !strings.Contains(body, "later.md") || !strings.Contains(body, "deleted") {
		t.Fatalf("the folder's preview: %q, %v", body, err)
	}
	screenshot(t, ctx, "folder-restore-preview")
	restore(t, ctx, "", "Restored")
	waitSame(t, a, b, time.Minute, func(m map[string]string) error {
		if m["later.md"] != "" || m["gone.md"] == "" {
			return fmt.Errorf("want later.md gone and gone.md still there")
		}
		return nil
	})
}

// waitPage reloads u until its text holds want (a minute at most).
func waitPage(t *testing.T, ctx context.Context, u, want string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		body := visit(t, ctx, u)
		if strings.Contains(body, want) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed %q:\n%s", u, want, body)
		}
		time.Sleep(200 * time.Millisecond) // a person reloading the page
	}
}

// restore presses the history page's button (an XPath; "" when the
// preview is open already), then "Restore now" on the preview, and
// checks the page then says want.
func restore(t *testing.T, ctx context.Context, button, want string) {
	t.Helper()
	if button != "" {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.Search(button)), chromedp.WaitVisible(chromedp.Search(`//button[text()="Restore now"]`))); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.Search(`//button[text()="Restore now"]`)), chromedp.WaitNotPresent(chromedp.Search(`//button[text()="Restore now"]`))); err != nil {
		t.Fatal(err)
	}
	if body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body"))); err != nil || !strings.Contains(body, want) {
		t.Fatalf("after restore now: %q, %v; want %q", body, err, want)
	}
}
