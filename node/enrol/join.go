package enrol

import (
	"io"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/weftsync/weft/internal/p2p"
	"github.com/weftsync/weft/node/connect"
	"github.com/weftsync/weft/node/peerbook"
	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/protocol/member"
	"github.com/weftsync/weft/protocol/wire"
	"github.com/weftsync/weft/store/home"
	"github.com/weftsync/weft/store/vaultdb"
)

// ConfirmWait bounds how long a join waits for approval.
const ConfirmWait = member.ConfirmWait

// joinTimeout bounds a join that does not wait for approval: reaching the
// inviter and its answer.
const joinTimeout = 30 * time.Second

// JoinVault enrols this device in the vault an invite code names, syncing
// folder: it reaches the inviting device, proves the code, and records the
// vault's keys and membership in the home, asking to be named name (""
// for none). The next (or running) `weft up` syncs the folder.
// onPending is RequestJoin's: a code made with --confirm makes the join
// wait for approval, and the caller shows the words.
func JoinVault(ctx context.Context, h *home.Home, code, folder, name string, onPending func(words string)) (home.Vault, error) {
	inv, err := member.ParseInvite(code)
	if err != nil {
		return home.Vault{}, err
	}
	id, err := h.Identity()
	if err != nil {
		return home.Vault{}, err
	}
	if inv.Inviter == id.ID() {
		return home.Vault{}, errors.New("this invite was made by this device; run `weft join` on the device that should join")
	}
	hst, err := connect.NewHost(connect.HostConfig{Identity: id, ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}})
	if err != nil {
		return home.Vault{}, err
	}
	defer hst.Close()
	j, err := RequestJoin(ctx, hst, id, inv, name, onPending)
	if err != nil {
		return home.Vault{}, err
	}
	// The membership and the inviter's addresses are in the database
	// before the vault is visible: a crash part-way leaves no half-made
	// vault for an agent to open (AddVaultPrepared).
	hv, err := h.AddVaultPrepared(j.Secrets, folder, func(hv home.Vault) error {
		db, _, err := vaultdb.Open(hv.DBDir(), hv.ID)
		if err != nil {
			return err
		}
		defer db.Close()
		for _, r := range j.Records {
			if err := db.AppendMember(r); err != nil {
				return fmt.Errorf("recording membership: %w", err)
			}
		}
		peers := map[string][]string{inv.Inviter.String(): inv.Addrs}
		b, _ := json.Marshal(peers)
		u := &vaultdb.Update{}
		u.SetMeta(peerbook.MetaKey, b)
		return db.Commit(u)
	})
	if err != nil {
		return home.Vault{}, err
	}
	return hv, nil
}

// Joined is what a successful join returns.
type Joined struct {
	Secrets keys.VaultSecrets
	Records []member.Record
	Inviter peer.AddrInfo
}

// RequestJoin dials the inviter named in inv from host h (identity id),
// proves the code, and returns the vault keys and membership. It checks
// everything it receives: the records chain and are signed by the admin,
// the last one admits this device, and the secrets name the records'
// vault (whose genesis proves its ID). It changes nothing on disk. When
// the inviter holds the join for approval (a code made with --confirm),
// onPending (if set) gets the words this device should show, and
// RequestJoin waits up to ConfirmWait and a minute for the decision.
func RequestJoin(ctx context.Context, h host.Host, id *keys.Identity, inv member.Invite, name string, onPending func(words string)) (Joined, error) {
	var j Joined
	pid, err := p2p.PeerIDOf(inv.Inviter)
	if err != nil {
		return j, err
	}
	info := peer.AddrInfo{ID: pid}
	for _, a := range inv.Addrs {
		m, err := ma.NewMultiaddr(a)
		if err != nil {
			continue
		}
		info.Addrs = append(info.Addrs, m)
	}
	if len(info.Addrs) == 0 {
		return j, errors.New("the invite code names no usable address for the inviter")
	}
	dialCtx, cancel := context.WithTimeout(ctx, joinTimeout)
	defer cancel()
	if err := h.Connect(dialCtx, info); err != nil {
		return j, fmt.Errorf("reaching the inviting device (is `weft up` running there?): %w", err)
	}
	s, err := h.NewStream(dialCtx, pid, wire.ProtoPair)
	if err != nil {
		return j, fmt.Errorf("opening pairing stream: %w", err)
	}
	defer s.Close()
	j, err = AskJoin(ctx, s, func() { _ = s.Reset() }, id, inv, name, onPending)
	if err != nil {
		return j, err
	}
	j.Inviter = info
	return j, nil
}

// Stream is the stream a join is asked over.
type Stream interface {
	io.ReadWriter
	SetDeadline(time.Time) error
}

// AskJoin is RequestJoin's session on a stream to the inviter, opened
// already: abort ends the stream at once (a reset), for ctx ending while
// the join waits. Joined.Inviter is left for the caller.
func AskJoin(ctx context.Context, s Stream, abort func(), id *keys.Identity, inv member.Invite, name string, onPending func(words string)) (Joined, error) {
	var j Joined
	_ = s.SetDeadline(time.Now().Add(joinTimeout))
	// ctx ending (the user interrupting `weft join`) ends the wait too.
	stop := context.AfterFunc(ctx, abort)
	defer stop()
	f := wire.NewConn(s, nil)
	if err := f.Send(wire.MsgPairRequest, wire.PairRequest{Proof: inv.Proof(id.ID()), Name: name}); err != nil {
		return j, err
	}
	if err := f.Flush(); err != nil {
		return j, err
	}
	refused := func(err error) error {
		var we wire.Error
		if errors.As(err, &we) {
			if we.Code == wire.CodeJoinDenied {
				return fmt.Errorf("the join was not approved: %s", we.Reason)
			}
			return fmt.Errorf("the inviting device refused: %s", we.Reason)
		}
		return fmt.Errorf("pairing: %w", err)
	}
	t, p, err := f.Read()
	if err != nil {
		return j, refused(err)
	}
	if t == wire.MsgPairPending {
		if len(p) != 0 {
			return j, fmt.Errorf("pairing: %w: a PairPending with a payload", wire.ErrUnexpected)
		}
		if onPending != nil {
			onPending(inv.Words(id.ID()))
		}
		_ = s.SetDeadline(time.Now().Add(ConfirmWait + time.Minute)) // the inviter's wait, and a margin
		if p, err = f.Expect(wire.MsgPairAccept); err != nil {
			return j, refused(err)
		}
	} else if t != wire.MsgPairAccept {
		return j, fmt.Errorf("pairing: %w: got %s, want %s", wire.ErrUnexpected, t, wire.MsgPairAccept)
	}
	acc, err := wire.ParsePairAccept(p)
	if err != nil {
		return j, err
	}
	secret, err := inv.Unwrap(id.ID(), acc.WrappedKeys)
	if err != nil {
		return j, err
	}
	switch len(secret) {
	case keys.VaultSecretsSize:
		if j.Secrets, err = keys.ParseVaultSecrets(secret); err != nil {
			return j, fmt.Errorf("pairing: %w", err)
		}
	case len(keys.RootSecret{}):
		// An inviter older than recovery sends the root secret; this
		// device keeps only what a member needs of it.
		j.Secrets = keys.RootSecret(secret).Secrets()
	default:
		return j, fmt.Errorf("pairing: vault secrets of %d bytes", len(secret))
	}
	state := member.NewState(j.Secrets.Vault().ID)
	for i, raw := range acc.Records {
		r, err := member.Decode(raw)
		if err != nil {
			return j, fmt.Errorf("membership record %d: %w", i+1, err)
		}
		if err := state.Apply(r); err != nil {
			return j, fmt.Errorf("membership record %d: %w", i+1, err)
		}
		j.Records = append(j.Records, r)
	}
	if !state.IsMember(id.ID()) {
		return j, errors.New("pairing: the membership records do not admit this device")
	}
	if !state.CanAdmit(inv.Inviter, member.RoleMember) {
		return j, errors.New("pairing: the inviter may not admit devices to the vault")
	}
	return j, nil
}
