package relay

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	"github.com/weftsync/weft/protocol/keys"
)

// An operator drops a vault's replica with `weft relay drop`: its chunks
// (pack files or objects), its logs and its index are deleted, and the
// vault is recorded in the home's dropped file so that its devices, which
// still list the relay, cannot enroll it again and fill the disk anew.
// `weft relay drop --undo` takes it off the list.

// droppedFile lists the dropped vaults, one hex ID per line.
const droppedFile = "dropped"

var (
	errDropped = errors.New("this relay's operator dropped that vault")
	// ErrNotStored is dropping a vault the relay does not store.
	ErrNotStored = errors.New("this relay stores no replica of that vault")
)

// readDropped reads the home's dropped vaults.
func readDropped(home string) (map[keys.VaultID]bool, error) {
	out := map[keys.VaultID]bool{}
	b, err := os.ReadFile(filepath.Join(home, droppedFile))
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the dropped vaults: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		id, err := keys.ParseVaultID(string(line))
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", filepath.Join(home, droppedFile), line, err)
		}
		out[id] = true
	}
	return out, nil
}

// writeDropped replaces the home's dropped file with set, durably.
func writeDropped(home string, set map[keys.VaultID]bool) error {
	var lines []string
	for id := range set {
		lines = append(lines, hex.EncodeToString(id[:]))
	}
	slices.Sort(lines)
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	p := filepath.Join(home, droppedFile)
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("writing the dropped vaults: %w", err)
	}
	_, err = f.Write(b.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		return fmt.Errorf("writing the dropped vaults: %w", err)
	}
	return nil
}

// markDropped adds id to (or with undo removes it from) the home's list.
func markDropped(home string, id keys.VaultID, undo bool) error {
	set, err := readDropped(home)
	if err != nil {
		return err
	}
	if set[id] == !undo {
		return nil
	}
	if undo {
		delete(set, id)
	} else {
		set[id] = true
	}
	return writeDropped(home, set)
}

// destroy stops the replica's loops and deletes everything it holds: the
// chunk store (Destroy) and the replica's directory.
func (r *replica) destroy() error {
	r.stopLoops()
	var errs []error
	if err := r.chunks.Destroy(); err != nil {
		errs = append(errs, fmt.Errorf("deleting the chunks: %w", err))
	}
	if err := r.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing the log: %w", err))
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(r.dir); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", r.dir, err))
		}
	}
	return errors.Join(errs...)
}

// stopLoops ends the replica's fetch and GC loops and waits for them.
func (r *replica) stopLoops() {
	r.gone.Store(true)
	if r.cancelLoops != nil {
		r.cancelLoops()
	}
	r.loops.Wait()
}

// Drop deletes the running relay's replica of vault id and refuses the
// vault from now on (Undrop takes that back). Streams of the vault in
// progress end with errors.
func (r *Relay) Drop(id keys.VaultID) error {
	r.mu.Lock()
	rep := r.vaults[id]
	if rep == nil {
		r.mu.Unlock()
		return ErrNotStored
	}
	if err := markDropped(r.cfg.Home, id, false); err != nil {
		r.mu.Unlock()
		return err
	}
	delete(r.vaults, id)
	r.dropped[id] = true
	delete(r.limiters, id)
	r.mu.Unlock()
	// Its streams and pulls end (their context is the replica's, and
	// isSource says no to a gone replica); a scrub step that holds it gets
	// ErrClosed from its store once it is destroyed.
	if err := rep.destroy(); err != nil {
		return fmt.Errorf("dropping vault %s: %w", id, err)
	}
	r.log.Info("vault dropped by the operator", "vault", id)
	return nil
}

// Undrop lets the running relay serve vault id again: its devices enroll
// it anew and upload what they hold.
func (r *Relay) Undrop(id keys.VaultID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := markDropped(r.cfg.Home, id, true); err != nil {
		return err
	}
	delete(r.dropped, id)
	return nil
}

// DropInHome is Drop for a stopped relay's home (or, with undo, Undrop).
func DropInHome(home string, id keys.VaultID, undo bool, stores ChunkStores, log *slog.Logger) error {
	if undo {
		return markDropped(home, id, true)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if stores == nil {
		stores = PackChunks
	}
	if _, err := os.Stat(replicaDir(home, id)); errors.Is(err, os.ErrNotExist) {
		return ErrNotStored
	}
	// Opened before it is marked: a running relay holds the replica, and
	// the drop is then refused here with nothing changed.
	rep, err := openReplica(home, id, Quota{}, stores, log, nil)
	if err != nil {
		return fmt.Errorf("opening vault %s (is the relay running? ask it with --metrics): %w", id, err)
	}
	if err := markDropped(home, id, false); err != nil {
		rep.close()
		return err
	}
	if err := rep.destroy(); err != nil {
		return fmt.Errorf("dropping vault %s: %w", id, err)
	}
	return nil
}

// serveDrop answers POST /admin/drop?vault=ID[&undo=1].
func (r *Relay) serveDrop(w http.ResponseWriter, req *http.Request) {
	id, err := keys.ParseVaultID(req.URL.Query().Get("vault"))
	if err != nil {
		http.Error(w, "vault: "+err.Error(), http.StatusBadRequest)
		return
	}
	if req.URL.Query().Get("undo") != "" {
		err = r.Undrop(id)
	} else {
		err = r.Drop(id)
	}
	switch {
	case errors.Is(err, ErrNotStored):
		http.Error(w, err.Error(), http.StatusNotFound)
	case err != nil:
		r.log.Warn("drop asked for by the operator", "vault", id, "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"vault": id.String()})
	}
}
