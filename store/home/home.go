package home

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/keyfile"
)

// Errors.
var (
	ErrNoVaults      = errors.New("no vault in this home: run `weft init FOLDER` or `weft join CODE FOLDER` first")
	ErrFolderInVault = errors.New("folder already belongs to a vault on this device")
	ErrFolderNested  = errors.New("folder is inside, or contains, another synced folder or the weft home")
	ErrNoAgent       = errors.New("no running agent: start one with `weft up`")
)

// File and directory names inside a home.
const (
	deviceKeyFile = "device.key"
	vaultsDir     = "vaults"
	rootKeyFile   = "root.key"      // vaults made before recovery: the root secret
	secretsFile   = "vault.secrets" // what a member device holds (keys.VaultSecrets)
	vaultFile     = "vault.json"
	// vaultsLockFile serialises AddVault calls (see AddVaultPrepared).
	vaultsLockFile = "vaults.lock"
	dbDir          = "db"
	apiFile        = "api.json"
)

// Home is an opened home directory.
type Home struct {
	Dir string
}

// DefaultDir is where the home lives when neither WEFT_HOME nor --home
// says: weft/ under the user's configuration directory.
func DefaultDir() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the user configuration directory: %w", err)
	}
	return filepath.Join(d, "weft"), nil
}

// Open opens (creating with 0700 if missing) the home at dir.
func Open(dir string) (*Home, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("home %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("creating home %s: %w", abs, err)
	}
	return &Home{Dir: abs}, nil
}

// Identity loads the device key, creating one on first use.
func (h *Home) Identity() (*keys.Identity, error) {
	path := filepath.Join(h.Dir, deviceKeyFile)
	id, err := keyfile.LoadIdentity(path)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	id, err = keys.GenerateIdentity(rand.Reader)
	if err != nil {
		return nil, err
	}
	if err := keyfile.SaveIdentity(path, id); err != nil {
		return nil, err
	}
	return id, nil
}

// Vault is one vault's configuration on this device.
type Vault struct {
	ID     keys.VaultID `json:"-"`
	IDHex  string       `json:"id"`
	Folder string       `json:"folder"` // absolute path of the synced folder
	Dir    string       `json:"-"`      // this vault's directory in the home
}

// DBDir is where the vault's database lives.
func (v Vault) DBDir() string { return filepath.Join(v.Dir, dbDir) }

// AddVault records a new vault for folder with its secrets (what a member
// device holds: never the root secret). The folder
// is created if missing. It refuses a folder that is already synced, nested
// in or around another synced folder, or that holds the home.
func (h *Home) AddVault(secrets keys.VaultSecrets, folder string) (Vault, error) {
	return h.AddVaultPrepared(secrets, folder, nil)
}

// AddVaultPrepared is AddVault with prepare run once the vault's directory
// and secrets exist and before vault.json, which makes the vault
// visible to Vaults, is written: what prepare writes (the vault's first
// database records) is in place before any agent can open the vault, and
// a crash before vault.json leaves a directory Vaults skips. If prepare
// fails, the vault's directory is removed and its error returned.
//
// Adds to one home are serialised by a lock (vaults.lock): two `weft
// join`s of one vault at once would otherwise both pass the checks below,
// and the loser's cleanup would remove the winner's directory. Holding
// it, a vault directory without vault.json can only be what an
// interrupted add left, and is cleared.
func (h *Home) AddVaultPrepared(secrets keys.VaultSecrets, folder string, prepare func(Vault) error) (Vault, error) {
	abs, err := filepath.Abs(folder)
	if err != nil {
		return Vault{}, fmt.Errorf("folder %s: %w", folder, err)
	}
	if err := os.MkdirAll(filepath.Join(h.Dir, vaultsDir), 0o700); err != nil {
		return Vault{}, fmt.Errorf("creating vaults directory: %w", err)
	}
	lock, err := lockFile(filepath.Join(h.Dir, vaultsLockFile))
	if err != nil {
		return Vault{}, err
	}
	defer lock.Close()
	vk := secrets.Vault()
	if err := h.checkNewVault(vk.ID, abs); err != nil {
		return Vault{}, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return Vault{}, fmt.Errorf("creating folder %s: %w", abs, err)
	}
	v := Vault{ID: vk.ID, IDHex: vk.ID.String(), Folder: abs, Dir: filepath.Join(h.Dir, vaultsDir, vk.ID.String())}
	if err := os.RemoveAll(v.Dir); err != nil { // an interrupted add's leftovers
		return Vault{}, fmt.Errorf("clearing vault %s: %w", v.IDHex, err)
	}
	if err := keyfile.SaveVaultSecrets(filepath.Join(v.Dir, secretsFile), secrets); err != nil {
		return Vault{}, err
	}
	if prepare != nil {
		if err := prepare(v); err != nil {
			return Vault{}, errors.Join(err, h.RemoveVault(v))
		}
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	if err := keyfile.Save(filepath.Join(v.Dir, vaultFile), append(b, '\n')); err != nil {
		return Vault{}, errors.Join(fmt.Errorf("saving vault config: %w", err), h.RemoveVault(v))
	}
	return v, nil
}

// CheckNewVault runs AddVault's checks of vault id and folder without
// adding anything: a caller that must do something irrevocable elsewhere
// before it can add the vault (`weft recover` admits this device on a
// peer) checks first. AddVault checks again under its lock.
func (h *Home) CheckNewVault(id keys.VaultID, folder string) error {
	abs, err := filepath.Abs(folder)
	if err != nil {
		return fmt.Errorf("folder %s: %w", folder, err)
	}
	return h.checkNewVault(id, abs)
}

// checkNewVault refuses a vault already here, a folder already synced,
// nested in or around another synced folder, or around the home.
func (h *Home) checkNewVault(id keys.VaultID, abs string) error {
	existing, err := h.Vaults()
	if err != nil && !errors.Is(err, ErrNoVaults) {
		return err
	}
	for _, v := range existing {
		if v.ID == id {
			return fmt.Errorf("vault %s is already on this device, syncing %s", v.IDHex, v.Folder)
		}
		if v.Folder == abs {
			return fmt.Errorf("%s: %w", abs, ErrFolderInVault)
		}
		if within(abs, v.Folder) || within(v.Folder, abs) {
			return fmt.Errorf("%s and %s: %w", abs, v.Folder, ErrFolderNested)
		}
	}
	if within(h.Dir, abs) || within(abs, h.Dir) || abs == h.Dir {
		return fmt.Errorf("%s and home %s: %w", abs, h.Dir, ErrFolderNested)
	}
	return nil
}

// within reports whether path is strictly inside dir.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Vaults lists the vaults on this device, sorted by folder. It returns
// ErrNoVaults when there are none.
func (h *Home) Vaults() ([]Vault, error) {
	dirs, err := os.ReadDir(filepath.Join(h.Dir, vaultsDir))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(dirs) == 0) {
		return nil, ErrNoVaults
	}
	if err != nil {
		return nil, fmt.Errorf("listing vaults: %w", err)
	}
	var out []Vault
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(h.Dir, vaultsDir, d.Name())
		b, err := keyfile.Load(filepath.Join(dir, vaultFile))
		if errors.Is(err, fs.ErrNotExist) {
			continue // an AddVault that never finished: vault.json is its last step
		}
		if err != nil {
			return nil, fmt.Errorf("vault %s: %w", d.Name(), err)
		}
		var v Vault
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("vault %s: config: %w", d.Name(), err)
		}
		if v.ID, err = keys.ParseVaultID(v.IDHex); err != nil || v.IDHex != d.Name() {
			return nil, fmt.Errorf("vault %s: config names vault %q", d.Name(), v.IDHex)
		}
		v.Dir = dir
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, ErrNoVaults
	}
	slices.SortFunc(out, func(a, b Vault) int { return strings.Compare(a.Folder, b.Folder) })
	return out, nil
}

// VaultSecrets loads a vault's secrets. A vault added before recovery
// existed holds its root secret instead (root.key), from which they derive;
// such a vault keeps it (its other devices hold it too, so removing this
// copy would protect nothing: docs/security.md, "Recovery").
func (h *Home) VaultSecrets(v Vault) (keys.VaultSecrets, error) {
	s, err := keyfile.LoadVaultSecrets(filepath.Join(v.Dir, secretsFile))
	if !errors.Is(err, fs.ErrNotExist) {
		if err == nil && s.Vault().ID != v.ID {
			return s, fmt.Errorf("vault %s: %w: its secrets name vault %s", v.IDHex, keyfile.ErrCorrupt, s.Vault().ID)
		}
		return s, err
	}
	root, rerr := keyfile.LoadRootSecret(filepath.Join(v.Dir, rootKeyFile))
	if rerr != nil {
		if errors.Is(rerr, fs.ErrNotExist) {
			return s, err // name the file this version writes
		}
		return s, rerr
	}
	if root.Vault().ID != v.ID {
		return s, fmt.Errorf("vault %s: %w: its root secret names vault %s", v.IDHex, keyfile.ErrCorrupt, root.Vault().ID)
	}
	return root.Secrets(), nil
}

// APIInfo is how a CLI command reaches the running agent.
type APIInfo struct {
	Addr  string `json:"addr"`  // host:port on 127.0.0.1
	Token string `json:"token"` // bearer token
	PID   int    `json:"pid"`
}

// WriteAPIInfo records the running agent's API address and token (0600).
func (h *Home) WriteAPIInfo(info APIInfo) error {
	b, _ := json.Marshal(info)
	return keyfile.Save(filepath.Join(h.Dir, apiFile), b)
}

// RemoveAPIInfo forgets the API address when the agent stops.
func (h *Home) RemoveAPIInfo() error {
	err := os.Remove(filepath.Join(h.Dir, apiFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ReadAPIInfo returns the running agent's API address and token, or
// ErrNoAgent.
func (h *Home) ReadAPIInfo() (APIInfo, error) {
	var info APIInfo
	b, err := keyfile.Load(filepath.Join(h.Dir, apiFile))
	if errors.Is(err, fs.ErrNotExist) {
		return info, ErrNoAgent
	}
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("agent API info: %w", err)
	}
	return info, nil
}

// listenFile records the ports the agent listened on (ListenPorts).
const listenFile = "listen.json"

// listenRecord is listenFile's content.
type listenRecord struct {
	// Ports maps each configured listen address with port 0 to the port
	// it got at the last start.
	Ports map[string]int `json:"ports"`
}

// ListenPorts returns the ports the agent listened on at its last start,
// by configured address (nil when none are recorded). A record that does
// not decode is an error; the caller then listens where the system says
// and records anew.
func (h *Home) ListenPorts() (map[string]int, error) {
	b, err := keyfile.Load(filepath.Join(h.Dir, listenFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r listenRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("listen ports %s: %w", filepath.Join(h.Dir, listenFile), err)
	}
	return r.Ports, nil
}

// SetListenPorts records the ports the agent now listens on, for its
// next start (durably, replacing the record).
func (h *Home) SetListenPorts(ports map[string]int) error {
	b, _ := json.Marshal(listenRecord{Ports: ports})
	return keyfile.Save(filepath.Join(h.Dir, listenFile), b)
}
