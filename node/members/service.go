package members

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/weftsync/weft/node/api"
	"github.com/weftsync/weft/node/roster"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
)

// Vault is one vault's membership as members acts on it.
type Vault interface {
	ID() keys.VaultID
	// Folder is the folder the vault syncs here, for messages and events.
	Folder() string
	// Roster is the vault's membership; it has its own lock.
	Roster() *roster.Roster
	// Secrets is what a member holds of the vault, wrapped for a joiner.
	Secrets() []byte
	// LogHead is this device's head of d's log: what a revocation of d
	// keeps.
	LogHead(d keys.DeviceID) uint64
	// Applied does what follows a record this device signed and stored:
	// new key epochs, sessions told that membership grew, a revoked
	// device's connections ended.
	Applied(r member.Record)
	// Ingest stores and applies a record a peer sent (a recovery's).
	Ingest(raw []byte) error
}

// Agent is what the running device offers members.
type Agent interface {
	Self() keys.DeviceID
	Now() time.Time
	// Addrs are the addresses an invite code names.
	Addrs() []string
	// Vault is the vault with ID id, or nil when it is not held here.
	Vault(id keys.VaultID) Vault
	// Vaults are the vaults held here, in a stable order.
	Vaults() []Vault
	Publish(api.Event)
	// Counter counts the traffic of an admitted device's streams.
	Counter(d keys.DeviceID) wire.Counter
}

// Service answers for the membership of the agent's vaults. Its methods
// are safe for concurrent use: each vault's roster and the invites have
// locks of their own.
type Service struct {
	agent   Agent
	log     *slog.Logger
	invites roster.Invites
}

// New returns the membership service of agent; log is where joins,
// changes and refusals are told.
func New(agent Agent, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{agent: agent, log: log}
}

// Errors of the changes besides node/roster's ErrNotAdmin.
var (
	// ErrNoSuchDevice means no current member matches the device named.
	ErrNoSuchDevice = roster.ErrNoSuchDevice
	// ErrAmbiguousDevice means several members match a device prefix.
	ErrAmbiguousDevice = roster.ErrAmbiguousDevice
	// ErrRevokeSelf means a device was asked to revoke itself.
	ErrRevokeSelf = roster.ErrRevokeSelf
)

// PickVault finds a vault by a prefix of its hex ID; empty picks the only
// vault.
func (s *Service) PickVault(prefix string) (Vault, error) {
	var match []Vault
	for _, v := range s.agent.Vaults() {
		if strings.HasPrefix(v.ID().String(), strings.ToLower(prefix)) {
			match = append(match, v)
		}
	}
	switch {
	case len(match) == 1:
		return match[0], nil
	case len(match) == 0:
		return nil, fmt.Errorf("no vault %q on this device", prefix)
	default:
		return nil, errors.New("several vaults on this device; name one with --vault")
	}
}
