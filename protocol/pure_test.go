package protocol

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoGoroutines: the sync core and the rest of protocol/ start no
// goroutines and wait on no channels, so every result is a function of the
// arguments alone (clocks, global randomness and IO are banned by
// TestProtocolIsPure and TestLayering in the repository root).
func TestNoGoroutines(t *testing.T) {
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: go statement in protocol/", fset.Position(n.Pos()))
			case *ast.SelectStmt:
				t.Errorf("%s: select in protocol/", fset.Position(n.Pos()))
			case *ast.SendStmt:
				t.Errorf("%s: channel send in protocol/", fset.Position(n.Pos()))
			case *ast.ChanType:
				t.Errorf("%s: channel type in protocol/", fset.Position(n.Pos()))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("checked %d files, want the whole of protocol/", files)
	}
}
