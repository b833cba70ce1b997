package folder

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

const killChildEnv = "WEFT_FOLDER_KILL_CHILD"

// version returns the k-th content the kill test writes: its length varies
// with k, and every byte says k, so a torn file shows.
func version(k int) string {
	return strings.Repeat(strconv.Itoa(k%10), 1000+(k*7919)%50000)
}

// killChild, run in a child process, applies version after version of "f"
// and prints "done k" after each, until it is killed.
func killChild(dir string) {
	fsys, err := OpenOS(dir)
	if err != nil {
		panic(err)
	}
	idx := MapIndex{}
	info, err := fsys.Lstat("f")
	if err != nil {
		panic(err)
	}
	idx.Put(RecordOf("f", info))
	a, err := NewApplier(ApplierConfig{FS: fsys, Index: idx})
	if err != nil {
		panic(err)
	}
	for k := 1; ; k++ {
		c := version(k)
		out, err := a.WriteFile(context.Background(), FileVersion{Path: "f", Size: int64(len(c)), MTime: int64(k) * 1e9}, strings.NewReader(c))
		if err != nil {
			panic(err)
		}
		idx.Put(RecordOf("f", out.Info))
		fmt.Printf("done %d\n", k)
	}
}

// TestApplySurvivesSIGKILL kills (SIGKILL) a process in the middle of a
// stream of applies: the file must hold one complete version, and
// CleanTemps must leave no temp file.
func TestApplySurvivesSIGKILL(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		killChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("spawns a process")
	}
	for round := range 3 {
		dir := t.TempDir()
		if err := os.WriteFile(dir+"/f", []byte(version(0)), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestApplySurvivesSIGKILL$")
		cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		want := 5 + round*20
		for n := 0; n < want && sc.Scan(); {
			if strings.HasPrefix(sc.Text(), "done ") {
				n++
			}
		}
		cmd.Process.Kill() // SIGKILL, somewhere inside an apply
		cmd.Wait()

		got, err := os.ReadFile(dir + "/f")
		if err != nil {
			t.Fatal(err)
		}
		k, ok := 0, len(got) > 0
		if ok {
			k, _ = strconv.Atoi(string(got[:1]))
		}
		complete := false
		for v := k; v < 10000; v += 10 {
			if string(got) == version(v) {
				complete = true
				break
			}
		}
		if !complete {
			t.Fatalf("round %d: f holds %d bytes that are no complete version", round, len(got))
		}
		fsys, err := OpenOS(dir)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := NewApplier(ApplierConfig{FS: fsys, Index: MapIndex{}})
		if _, err := a.CleanTemps(context.Background()); err != nil {
			t.Fatal(err)
		}
		noTemps(t, fsys)
		fsys.Close()
	}
}
