package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
)

// TestUILogin: `weft ui --print-url` prints a one-time link to the running
// agent's UI; a browser following it sees its folders, and the link does
// not work a second time. The API itself still wants its token.
func TestUILogin(t *testing.T) {
	a := newDevice(t, "a")
	a.must("init", a.folder)
	a.up()
	link := strings.TrimSpace(a.must("ui", "--print-url"))
	if !strings.HasPrefix(link, "http://127.0.0.1:") || !strings.Contains(link, "/ui/login?code=") {
		t.Fatalf("weft ui --print-url: %q", link)
	}
	browse := func(u string) (int, string) {
		t.Helper()
		jar, _ := cookiejar.New(nil)
		resp, err := (&http.Client{Jar: jar}).Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := browse(link); code != http.StatusOK || !strings.Contains(body, a.folder) {
		t.Fatalf("following the link: %d, want the folders page naming %s:\n%s", code, a.folder, body)
	}
	if code, _ := browse(link); code != http.StatusUnauthorized {
		t.Errorf("the link a second time: %d, want 401", code)
	}
	base := link[:strings.Index(link, "/ui/")]
	if code, _ := browse(base + "/v1/status"); code != http.StatusUnauthorized {
		t.Errorf("the API without its token: %d, want 401", code)
	}
}
