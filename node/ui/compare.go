package ui

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/protocol"
)

// compareFirst is how many conflicts the conflicts page compares side by
// side, and compareBudget how many bytes of both sides together at most:
// a folder with thousands of copies, or large notes, renders a page of
// bounded size and time; the rest keep their buttons.
const (
	compareFirst  = 20
	compareBudget = 1 << 20
)

// compareAll compares the first conflicts within the budgets; nil
// entries are not compared (no copy of a file, or past a budget).
func compareAll(cs []api.Conflict) []*comparison {
	out := make([]*comparison, len(cs))
	budget := compareBudget
	for i, c := range cs {
		if i == compareFirst || budget <= 0 {
			break
		}
		out[i] = compare(c, &budget)
	}
	return out
}

// maxCompareBytes bounds each side the conflicts page compares: larger
// files are resolved with the buttons alone.
const maxCompareBytes = 256 << 10

// comparison is a text conflict shown side by side, and the starting
// point of a merge edited by hand.
type comparison struct {
	// Sides identifies the two contents compared (sideHash of each): a
	// merge is taken only while both are still what was shown.
	Sides string
	// CRLF: both sides end their lines with CRLF, and so does the merge
	// (browsers post a text box's lines with CRLF whatever they were).
	CRLF bool
	Rows []diffRow
	// Draft is what holds the name with each differing region written as
	// both sides between conflict markers, for the person to edit.
	Draft string
	// Why the two sides are not compared (binary, too large, unreadable,
	// too different), when Rows is empty.
	Why string
}

// diffRow is one row of the side-by-side view: a line of what holds the
// name (Left) and of the copy (Right); Same when both are the one line.
type diffRow struct {
	Left, Right string
	HasL, HasR  bool
	Same        bool
}

// Conflict markers of a draft. A merge posted with them still in it is
// refused: it would record the markers as the file's content.
const (
	markName = "<<<<<<< what holds the name"
	markMid  = "======="
	markCopy = ">>>>>>> the conflict copy"
)

// compare reads a conflict's two sides from the folder and lines them
// up, taking their sizes from budget.
func compare(c api.Conflict, budget *int) *comparison {
	if c.Of == "" {
		return nil
	}
	name, cp, err := readSides(c)
	if err != nil {
		return &comparison{Why: err.Error()}
	}
	if *budget -= len(name) + len(cp); *budget < 0 {
		return &comparison{Why: "the page compares at most " + fmt.Sprint(compareBudget>>10) + " KiB of conflicts; resolve some above first"}
	}
	ops, ok := protocol.DiffLines(name, cp)
	if !ok {
		return &comparison{Why: "not text, or too different to compare line by line"}
	}
	d := draft(ops)
	if !bytes.HasSuffix(name, []byte("\n")) && !bytes.HasSuffix(cp, []byte("\n")) {
		d = strings.TrimSuffix(d, "\n") // neither side ends with a newline: nor does the draft
	}
	crlf := bytes.Contains(name, []byte("\r\n")) && bytes.Contains(cp, []byte("\r\n"))
	if crlf {
		d = strings.ReplaceAll(d, "\r\n", "\n") // the box shows lines; the merge gets CRLF back
	}
	return &comparison{Sides: sidesHash(name, cp), CRLF: crlf, Rows: sideBySide(ops), Draft: d}
}

// readSides reads what holds a conflict's name and its copy, each a
// regular file of at most maxCompareBytes, through the folder's root: a
// symlinked directory cannot lead outside the folder.
func readSides(c api.Conflict) (name, cp []byte, err error) {
	root, err := os.OpenRoot(c.Folder)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	if name, err = readSide(root, c.Of); err != nil {
		return nil, nil, err
	}
	if cp, err = readSide(root, c.Path); err != nil {
		return nil, nil, err
	}
	return name, cp, nil
}

// readSide reads one regular file of root, of at most maxCompareBytes.
func readSide(root *os.Root, rel string) ([]byte, error) {
	p := filepath.FromSlash(rel)
	info, err := root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s is not there now", filepath.Base(p))
	case err != nil:
		return nil, err
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(p))
	case info.Size() > maxCompareBytes:
		return nil, fmt.Errorf("%s is larger than %d KiB", filepath.Base(p), maxCompareBytes>>10)
	}
	f, err := root.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxCompareBytes+1))
}

// sidesHash identifies the two contents a comparison showed.
func sidesHash(name, cp []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:", len(name))
	h.Write(name)
	h.Write(cp)
	return hex.EncodeToString(h.Sum(nil))
}

// sideBySide pairs each run of removed lines with the run of added lines
// after it, row by row.
func sideBySide(ops []protocol.LineOp) []diffRow {
	var rows []diffRow
	for i := 0; i < len(ops); {
		if ops[i].Kind == protocol.LineSame {
			rows = append(rows, diffRow{Left: ops[i].Line, Right: ops[i].Line, HasL: true, HasR: true, Same: true})
			i++
			continue
		}
		var olds, news []string
		for ; i < len(ops) && ops[i].Kind == protocol.LineOld; i++ {
			olds = append(olds, ops[i].Line)
		}
		for ; i < len(ops) && ops[i].Kind == protocol.LineNew; i++ {
			news = append(news, ops[i].Line)
		}
		for k := range max(len(olds), len(news)) {
			var r diffRow
			if k < len(olds) {
				r.Left, r.HasL = olds[k], true
			}
			if k < len(news) {
				r.Right, r.HasR = news[k], true
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// draft writes the lines both sides share once and each differing region
// as both sides between conflict markers.
func draft(ops []protocol.LineOp) string {
	var b strings.Builder
	line := func(s string) {
		b.WriteString(s)
		if !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
	}
	for i := 0; i < len(ops); {
		if ops[i].Kind == protocol.LineSame {
			b.WriteString(ops[i].Line)
			i++
			continue
		}
		line(markName)
		for ; i < len(ops) && ops[i].Kind == protocol.LineOld; i++ {
			line(ops[i].Line)
		}
		line(markMid)
		for ; i < len(ops) && ops[i].Kind == protocol.LineNew; i++ {
			line(ops[i].Line)
		}
		line(markCopy)
	}
	return b.String()
}

// merge takes a merge edited on the conflicts page as the file's new
// content (weft resolve --take): written to a private temporary file the
// agent reads, then removed. A merge that still holds the page's conflict
// markers is refused.
func (h handler) merge(w http.ResponseWriter, r *http.Request, _ string) {
	text := strings.ReplaceAll(r.PostFormValue("text"), "\r\n", "\n") // browsers post textareas with CRLF
	q := url.Values{}
	defer func() { http.Redirect(w, r, "/ui/conflicts?"+q.Encode(), http.StatusSeeOther) }()
	for _, l := range strings.Split(text, "\n") {
		if l == markName || l == markCopy {
			q.Set("err", "The merge still has conflict markers ("+markName+" … "+markCopy+"): keep what you want between them and remove the markers.")
			return
		}
	}
	// Taken only over what was shown: a newer version of either side
	// that arrived since would otherwise be replaced unseen.
	path := r.PostFormValue("path")
	var c *api.Conflict
	for _, x := range h.b.Conflicts() {
		if filepath.Join(x.Folder, filepath.FromSlash(x.Path)) == path {
			c = &x
		}
	}
	if c == nil {
		q.Set("err", "No conflict copy "+path+" now: it was resolved meanwhile.")
		return
	}
	name, cp, err := readSides(*c)
	if err != nil || sidesHash(name, cp) != r.PostFormValue("sides") {
		q.Set("err", "The file or its copy changed since the page showed them: look at them again, then merge.")
		return
	}
	if r.PostFormValue("crlf") != "" {
		text = strings.ReplaceAll(text, "\n", "\r\n")
	}
	tmp, err := os.CreateTemp("", "weft-ui-merge-")
	if err != nil {
		q.Set("err", "Writing the merge: "+err.Error())
		return
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(text)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		q.Set("err", "Writing the merge: "+err.Error())
		return
	}
	res, err := h.b.Resolve(r.Context(), api.ResolveRequest{Path: path, Take: tmp.Name()})
	if err != nil {
		q.Set("err", err.Error())
		return
	}
	q.Set("msg", "Your merge is now "+res.Of+"; "+res.Copy+" is gone.")
}
