package scripttest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// RunDir runs every testdata/*.txt script (relative to the test's package)
// as a subtest. newRun is called once per script and returns the function
// that runs one command line and returns its output (an empty output is
// written as "ok"); a command's error fails the script at its line.
func RunDir(t *testing.T, update bool, newRun func(t *testing.T) func(cmd string) (string, error)) {
	t.Helper()
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata/: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { Run(t, file, update, newRun(t)) })
	}
}

// Run runs one script file through run (see RunDir).
func Run(t *testing.T, file string, update bool, run func(cmd string) (string, error)) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(src))
	line := 0
	for sc.Scan() {
		line++
		cmd := sc.Text()
		if len(bytes.TrimSpace([]byte(cmd))) == 0 || cmd[0] == '#' {
			out.WriteString(cmd + "\n")
			continue
		}
		if !sc.Scan() || sc.Text() != "----" {
			t.Fatalf("%s:%d: command without ---- line", file, line)
		}
		line++
		var want bytes.Buffer
		for sc.Scan() {
			line++
			if sc.Text() == "" {
				break
			}
			want.WriteString(sc.Text() + "\n")
		}
		got, err := run(cmd)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", file, line, cmd, err)
		}
		if got == "" {
			got = "ok\n"
		}
		if !update && got != want.String() {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", file, line, cmd, got, want.String())
		}
		fmt.Fprintf(&out, "%s\n----\n%s\n", cmd, got)
	}
	if update {
		if err := os.WriteFile(file, append(bytes.TrimRight(out.Bytes(), "\n"), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
