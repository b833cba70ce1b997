package weft

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goPackage is the part of `go list -json` these tests read.
type goPackage struct {
	ImportPath string
	Dir        string
	Name       string
	Deps       []string
	Imports    []string
	GoFiles    []string
}

func listPackages(t *testing.T) []goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

const module = "github.com/weftsync/weft"

// TestLayering enforces ARCHITECTURE.md's layers: protocol/ imports no
// networking and no disk, store/ knows no networking (but for the object
// storage store's HTTP, objectStorage) and no libp2p, and no layer imports
// one above it. Bans apply to every transitive dependency, except "os", which the
// standard library itself pulls in (fmt does): it is banned as a direct
// import only.
func TestLayering(t *testing.T) {
	for _, p := range listPackages(t) {
		if !strings.HasPrefix(p.ImportPath, module+"/protocol") {
			continue
		}
		for _, imp := range p.Imports {
			if imp == "os" || imp == "os/exec" || imp == "syscall" || imp == "io/fs" {
				t.Errorf("%s imports %s: protocol/ does no disk IO", p.ImportPath, imp)
			}
		}
	}
	forbidden := map[string][]string{
		module + "/protocol": {"net", "github.com/libp2p/", "github.com/syndtr/goleveldb", module + "/store", module + "/node", module + "/relay", module + "/simulation", module + "/bench", module + "/cmd"},
		module + "/store":    {"net", "github.com/libp2p/", module + "/node", module + "/relay", module + "/simulation", module + "/bench", module + "/cmd"},
		// ARCHITECTURE.md lists node/ above relay/: a device uses the
		// relay's client side (enrollment, relay addresses); the relay,
		// the simpler node, never needs a device's folder machinery.
		module + "/node":  {module + "/simulation", module + "/bench", module + "/cmd"},
		module + "/relay": {module + "/node", module + "/simulation", module + "/bench", module + "/cmd"},
		// node/connect reaches peers (host, relays, DHT, kinds of
		// connection) for the shell; it knows vaults only through the
		// narrow views the shell hands it, never the shell or its store.
		module + "/node/connect": {module + "/node", module + "/store", "github.com/syndtr/goleveldb"},
		module + "/simulation":   {module + "/bench", module + "/cmd"},
	}
	for _, p := range listPackages(t) {
		for layer, bans := range forbidden {
			if p.ImportPath != layer && !strings.HasPrefix(p.ImportPath, layer+"/") {
				continue
			}
			for _, dep := range p.Deps {
				for _, ban := range bans {
					if ban == "net" && objectStorage(p.ImportPath) {
						continue
					}
					if dep == ban || strings.HasPrefix(dep, strings.TrimSuffix(ban, "/")+"/") {
						t.Errorf("%s imports %s (directly or not): %s must not", p.ImportPath, dep, layer)
					}
				}
			}
		}
	}
}

// objectStorage reports the one store that is reached over a network by
// nature: the chunk store in S3-compatible object storage (store/s3store)
// speaks HTTP to its server through minio-go. It still knows no libp2p and
// nothing above store/.
func objectStorage(importPath string) bool {
	return importPath == module+"/store/s3store" || strings.HasPrefix(importPath, module+"/store/s3store/")
}

// TestEnrolLinksNoAgent keeps node/enrol, which puts a device into a
// vault while no agent runs, free of the node shell: it reaches a running
// agent only over the network, as a device elsewhere would.
func TestEnrolLinksNoAgent(t *testing.T) {
	found := false
	for _, p := range listPackages(t) {
		if p.ImportPath != module+"/node/enrol" {
			continue
		}
		found = true
		for _, dep := range p.Deps {
			if dep == module+"/node" {
				t.Errorf("%s imports %s (directly or not): it must not link the agent", p.ImportPath, dep)
			}
		}
	}
	if !found {
		t.Fatal("package node/enrol not listed")
	}
}

// TestAgentVocabularyStandsAlone keeps the local API's vocabulary and
// server (node/api), the doctor's rules (node/doctor), the rules of
// history and restore (node/history) and carrying a restore out
// (node/restore), the scrub's pacing and verdict (node/scrub), the authoring gate
// (node/ownlog), the folder guard (node/folderguard), a full home's fault
// (node/homefull), the watcher's fallback rescans (node/watchfallback), scan
// notes and peer rates (node/observe), what peers said of this device
// (node/heard), answering for membership (node/members), settling a conflict copy (node/resolve), what a vault derives from its log (node/logview), the web UI (node/ui), a vault's membership
// (node/roster), the scan's sealing pipeline (node/seal), the clock
// rules (node/clock), the remembered addresses (node/peerbook), the key
// epochs (node/keyring) and the content pipeline (node/content) free of
// the agent they describe: no node (the shell), no libp2p, no database.
// The CLI and the benchmarks read them without linking an agent, and the
// rules stay testable without a network or a disk.
func TestAgentVocabularyStandsAlone(t *testing.T) {
	bans := []string{"github.com/libp2p/", "github.com/syndtr/goleveldb", module + "/store/", module + "/relay"}
	for _, p := range listPackages(t) {
		switch strings.TrimPrefix(p.ImportPath, module+"/") {
		case "node/api", "node/doctor", "node/history", "node/restore", "node/scrub", "node/ownlog", "node/folderguard", "node/homefull", "node/watchfallback", "node/observe", "node/heard", "node/members", "node/resolve", "node/logview", "node/ui", "node/roster", "node/seal", "node/clock", "node/peerbook", "node/keyring", "node/content", "node/damaged", "node/folderstate":
		default:
			continue
		}
		for _, dep := range p.Deps {
			bad := dep == module+"/node"
			for _, ban := range bans {
				bad = bad || dep == strings.TrimSuffix(ban, "/") || strings.HasPrefix(dep, strings.TrimSuffix(ban, "/")+"/")
			}
			if bad {
				t.Errorf("%s imports %s (directly or not): it must not depend on the agent", p.ImportPath, dep)
			}
		}
	}
}

// TestProtocolIsPure keeps clocks and global randomness out of protocol/:
// time and randomness come in through arguments so that the simulation is
// deterministic.
func TestProtocolIsPure(t *testing.T) {
	banned := regexp.MustCompile(`time\.Now\(|time\.Since\(|time\.Until\(|rand\.(Int|Intn|Int63|Uint32|Uint64|Float64|Perm|Shuffle|Read|N)\(`)
	for _, p := range listPackages(t) {
		if p.ImportPath != module+"/protocol" && !strings.HasPrefix(p.ImportPath, module+"/protocol/") {
			continue
		}
		for _, f := range p.GoFiles {
			path := filepath.Join(p.Dir, f)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(src), "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "//") {
					continue
				}
				if banned.MatchString(line) {
					t.Errorf("%s:%d: clock or global randomness in protocol/: %s", path, i+1, strings.TrimSpace(line))
				}
			}
		}
	}
}

// TestEveryPackageHasDoc checks that each package has a doc.go with a
// package comment.
func TestEveryPackageHasDoc(t *testing.T) {
	for _, p := range listPackages(t) {
		if p.Name == "main" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(p.Dir, "doc.go"))
		if err != nil {
			t.Errorf("%s has no doc.go", p.ImportPath)
			continue
		}
		if !strings.Contains(string(src), "// Package "+p.Name+" ") {
			t.Errorf("%s/doc.go has no \"// Package %s ...\" comment", p.ImportPath, p.Name)
		}
	}
}
