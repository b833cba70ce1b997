package ui

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	qrcode "github.com/skip2/go-qrcode"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol/keys"
)

// invitation is an invite just made, as the pairing page shows it once.
type invitation struct {
	Folder  string
	Code    string
	Expires time.Time
	Confirm bool
	QR      template.HTML // an inline SVG of Code
}

// pairing shows the invite form and the joins waiting for approval.
func (h handler) pairing(w http.ResponseWriter, r *http.Request, s string) {
	q := r.URL.Query()
	h.render(w, http.StatusOK, "pairing.html", h.pairingPage(s, q.Get("msg"), q.Get("err")))
}

func (h handler) pairingPage(session, msg, errText string) page {
	return page{Title: "pairing", Message: msg, Error: errText, Status: h.b.Status(), Joins: h.b.WaitingJoins(), Token: h.l.FormToken(session)}
}

// invite makes an invite code for the folder asked for and shows it, with
// its QR code, in the answer itself: the code never sits in a URL.
func (h handler) invite(w http.ResponseWriter, r *http.Request, s string) {
	folder := r.PostFormValue("folder")
	var vault keys.VaultID
	if folder != "" {
		found := false
		for _, f := range h.b.Status().Folders {
			if f.Path == folder {
				v, err := keys.ParseVaultID(f.Vault)
				if err != nil {
					break
				}
				vault, found = v, true
			}
		}
		if !found {
			h.render(w, http.StatusBadRequest, "pairing.html", h.pairingPage(s, "", "No folder "+folder+" here."))
			return
		}
	}
	ttl, err := time.ParseDuration(r.PostFormValue("ttl"))
	if err != nil || ttl <= 0 || ttl > 7*24*time.Hour {
		ttl = 0 // the agent's default
	}
	confirm := r.PostFormValue("confirm") != ""
	inv, err := h.b.Invite(vault, ttl, confirm)
	if err != nil {
		h.render(w, http.StatusBadRequest, "pairing.html", h.pairingPage(s, "", "No invite: "+err.Error()))
		return
	}
	qr, err := qrSVG(inv.Code)
	if err != nil {
		h.render(w, http.StatusInternalServerError, "pairing.html", h.pairingPage(s, "", "The invite was made, but its QR code was not: "+err.Error()))
		return
	}
	p := h.pairingPage(s, "", "")
	p.Invite = &invitation{Folder: folder, Code: inv.Code, Expires: inv.Expires, Confirm: confirm, QR: qr}
	h.render(w, http.StatusOK, "pairing.html", p)
}

// decideJoin approves or denies a waiting join and goes back to the
// pairing page, saying what happened.
func (h handler) decideJoin(w http.ResponseWriter, r *http.Request, _ string) {
	approve := r.PostFormValue("decision") == "approve"
	j, err := h.b.DecideJoin(api.JoinDecision{Device: r.PostFormValue("device")}, approve)
	q := url.Values{}
	switch {
	case err != nil:
		q.Set("err", err.Error())
	case approve:
		q.Set("msg", "Approved: "+joinName(j)+" is joining "+j.Folder+".")
	default:
		q.Set("msg", "Denied: "+joinName(j)+" was not let in.")
	}
	http.Redirect(w, r, "/ui/pairing?"+q.Encode(), http.StatusSeeOther)
}

func joinName(j api.WaitingJoin) string {
	if j.Name != "" {
		return j.Name + " (" + shortID(j.Device) + ")"
	}
	return shortID(j.Device)
}

// qrSVG draws code as a QR code in an inline SVG (dark modules as
// rectangles, one per run in a row, inside the standard 4-module quiet
// zone). Inline markup, not an image URL: the UI's Content-Security-Policy
// allows no image source.
//
// The code is drawn in upper case, as `weft invite --qr` draws it: invite
// codes are case-insensitive base32, and upper case lets the QR code use
// its denser alphanumeric mode.
func qrSVG(code string) (template.HTML, error) {
	q, err := qrcode.New(strings.ToUpper(code), qrcode.Medium)
	if err != nil {
		return "", fmt.Errorf("encoding the invite as a QR code: %w", err)
	}
	q.DisableBorder = true
	bm := q.Bitmap()
	const quiet = 4
	n := len(bm) + 2*quiet
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="qr" viewBox="0 0 %d %d" width="%d" height="%d" shape-rendering="crispEdges" role="img" aria-label="QR code of the invite"><rect width="%d" height="%d" fill="#fff"/>`, n, n, n*6, n*6, n, n)
	for y, row := range bm {
		for x := 0; x < len(row); {
			if !row[x] {
				x++
				continue
			}
			start := x
			for x < len(row) && row[x] {
				x++
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="1"/>`, start+quiet, y+quiet, x-start)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()), nil // numbers only: nothing from outside is written into it
}
