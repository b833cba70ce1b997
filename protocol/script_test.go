package protocol

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftsync/weft/internal/scripttest"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/*.txt scripts (make rewrite)")

// TestGoldenScripts runs testdata/*.txt: datadriven-style scripts of commands,
// each followed by "----" and its expected output up to a blank line.
// Regenerate with go test ./protocol -run TestGoldenScripts -update.
//
// Commands (devices are single letters; a version ID is letter:seq[.index]):
//
//	add <id> <path> <kind> [clock=N] [mtime=SECONDS] [mode=OCTAL] [sup=id,id] [content="go-quoted"]
//	heads <path>
//	resolve <path> [taken=name,name]
func TestGoldenScripts(t *testing.T) {
	scripttest.RunDir(t, *update, func(t *testing.T) func(string) (string, error) {
		s := &script{g: NewGraph(), content: map[[32]byte]string{}}
		return func(cmd string) (string, error) { return s.run(t, cmd), nil }
	})
}

type script struct {
	g       *Graph
	content map[[32]byte]string
}

func parseID(t *testing.T, s string) VersionID {
	t.Helper()
	author, rest, ok := strings.Cut(s, ":")
	if !ok || len(author) != 1 {
		t.Fatalf("version ID %q: want letter:seq[.index]", s)
	}
	seqS, idxS, _ := strings.Cut(rest, ".")
	seq, err := strconv.ParseUint(seqS, 10, 64)
	if err != nil {
		t.Fatalf("version ID %q: %v", s, err)
	}
	var idx uint64
	if idxS != "" {
		if idx, err = strconv.ParseUint(idxS, 10, 32); err != nil {
			t.Fatalf("version ID %q: %v", s, err)
		}
	}
	return VersionID{Author: dev(author[0]), Seq: seq, Index: uint32(idx)}
}

func fmtID(id VersionID) string {
	s := fmt.Sprintf("%c:%d", id.Author[0], id.Seq)
	if id.Index != 0 {
		s += fmt.Sprintf(".%d", id.Index)
	}
	return s
}

// fields splits a command line on spaces, keeping key="quoted value" whole.
func fields(t *testing.T, line string) (args []string, kv map[string]string) {
	kv = map[string]string{}
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		end := strings.IndexByte(line, ' ')
		if end < 0 {
			end = len(line)
		}
		tok := line[:end]
		if k, v, ok := strings.Cut(tok, "="); ok {
			if strings.HasPrefix(v, `"`) {
				q, err := strconv.QuotedPrefix(line[len(k)+1:])
				if err != nil {
					t.Fatalf("bad quoted value in %q: %v", line, err)
				}
				if v, err = strconv.Unquote(q); err != nil {
					t.Fatal(err)
				}
				end = len(k) + 1 + len(q)
			}
			kv[k] = v
		} else {
			args = append(args, tok)
		}
		line = line[end:]
	}
	return args, kv
}

func (s *script) run(t *testing.T, line string) string {
	args, kv := fields(t, line)
	switch args[0] {
	case "add":
		kinds := map[string]Kind{"file": KindFile, "dir": KindDir, "symlink": KindSymlink, "delete": KindDeletion}
		v := Version{ID: parseID(t, args[1]), Path: args[2], Kind: kinds[args[3]], Mode: 0o644}
		num := func(k string, base int) int64 {
			if kv[k] == "" {
				return 0
			}
			n, err := strconv.ParseInt(kv[k], base, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
		v.Clock = uint64(num("clock", 10))
		v.MTime = t0 + num("mtime", 10)*int64(time.Second)
		// time= is the entry's clock (WinnerOrder's first key); without
		// it the entry was written when the file was modified.
		v.Time = v.MTime / 1e6
		if kv["time"] != "" {
			v.Time = (t0 + num("time", 10)*int64(time.Second)) / 1e6
		}
		if kv["mode"] != "" {
			v.Mode = uint32(num("mode", 8))
		}
		if kv["sup"] != "" {
			for _, p := range strings.Split(kv["sup"], ",") {
				v.Supersedes = append(v.Supersedes, parseID(t, p))
			}
		}
		if v.Kind == KindFile || v.Kind == KindSymlink {
			c := kv["content"]
			v.ContentHash, v.Size = hashOf(c), uint64(len(c))
			v.Text = v.Kind == KindFile && IsText([]byte(c))
			s.content[v.ContentHash] = c
		}
		if err := s.g.Add(v); err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		return "ok\n"
	case "heads":
		var b strings.Builder
		for _, h := range s.g.Heads(args[1]) {
			fmt.Fprintf(&b, "%s %v\n", fmtID(h.ID), h.Kind)
		}
		if d := s.g.Dangling(args[1]); len(d) > 0 {
			b.WriteString("dangling:")
			for _, id := range d {
				b.WriteString(" " + fmtID(id))
			}
			b.WriteString("\n")
		}
		if b.Len() == 0 {
			return "none\n"
		}
		return b.String()
	case "resolve":
		taken := map[string]bool{}
		for _, p := range strings.Split(kv["taken"], ",") {
			taken[p] = true
		}
		d, err := s.g.Resolve(args[1], func(p string, _ Version) NameUse {
			if taken[p] {
				return NameTaken
			}
			return NameFree
		})
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		return s.describe(d)
	}
	t.Fatalf("unknown command %q", line)
	return ""
}

func (s *script) describe(d Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: winner %s\n", d.Outcome, fmtID(d.Winner.ID))
	for _, v := range d.Dropped {
		fmt.Fprintf(&b, "dropped %s %v\n", fmtID(v.ID), v.Kind)
	}
	if d.Merge != nil {
		fmt.Fprintf(&b, "merge base %s sides", fmtID(d.Merge.Base.ID))
		sides := make([][]byte, len(d.Merge.Sides))
		for i, v := range d.Merge.Sides {
			fmt.Fprintf(&b, " %s", fmtID(v.ID))
			sides[i] = []byte(s.content[v.ContentHash])
		}
		b.WriteString("\n")
		merged, clean, err := MergeAll([]byte(s.content[d.Merge.Base.ContentHash]), sides)
		switch {
		case err != nil:
			fmt.Fprintf(&b, "merge refused: %v\n", err)
		case clean:
			fmt.Fprintf(&b, "merged %q\n", merged)
			return b.String()
		default:
			b.WriteString("merge not clean: fallback\n")
		}
	}
	for _, c := range d.Copies {
		fmt.Fprintf(&b, "copy %s %v -> %s\n", fmtID(c.Version.ID), c.Version.Kind, c.Path)
	}
	return b.String()
}
