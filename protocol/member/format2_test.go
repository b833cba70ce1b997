package member

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/weftsync/weft/protocol/keys"
)

// recoverableFixture is a recoverable vault (format-2 genesis named
// "laptop") with an admin and a member "phone", then the member revoked:
// epoch 1 exists and is sealed to the vault key too.
func recoverableFixture(t *testing.T) (s *State, admin, dev *keys.Identity, epoch1 keys.EpochSecret) {
	t.Helper()
	admin, dev = identity(t, 1), identity(t, 2)
	s = NewState(vault)
	apply(t, s, GenesisWith(admin, vaultKey, "laptop", FlagRecoverable, 1000))
	apply(t, s, s.Next(admin, Record{Op: OpAdd, Device: dev.ID(), Role: RoleMember, Name: "phone"}, 2000))
	op, secret, err := s.RevokeOp(seeded(5), dev.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, s.Next(admin, op, 3000))
	return s, admin, dev, secret
}

// admit adds d with role and name, signed by signer, sealing every epoch
// secret signer knows.
func admit(t *testing.T, s *State, signer, d *keys.Identity, role Role, name string) {
	t.Helper()
	secrets, err := s.EpochSecrets(signer, vaultRoot.Epoch0())
	if err != nil {
		t.Fatal(err)
	}
	op, err := s.AddOp(seeded(uint64(d.ID()[0])), d.ID(), role, secrets)
	if err != nil {
		t.Fatal(err)
	}
	op.Name = name
	apply(t, s, s.Next(signer, op, 1))
}

func apply(t *testing.T, s *State, r Record) {
	t.Helper()
	// Every record goes through its encoding, as one from a peer would.
	d, err := Decode(r.Encode())
	if err != nil {
		t.Fatalf("decode %s: %v", r.Op, err)
	}
	if err := s.Apply(d); err != nil {
		t.Fatalf("apply %s: %v", r.Op, err)
	}
}

func TestFormat2Records(t *testing.T) {
	admin := identity(t, 1)
	g1 := Genesis(admin, vaultKey, 1000)
	if g1.Format != Format {
		t.Fatalf("a genesis with no name or settings is format %d, want %d", g1.Format, Format)
	}
	g2 := GenesisWith(admin, vaultKey, "laptop", FlagRecoverable, 1000)
	if g2.Format != Format2 {
		t.Fatalf("a named genesis is format %d, want %d", g2.Format, Format2)
	}
	d, err := Decode(g2.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "laptop" || d.Flags != FlagRecoverable || !bytes.Equal(d.Encode(), g2.Encode()) {
		t.Fatalf("decoded %+v", d)
	}
	s := NewState(vault)
	apply(t, s, g2)
	if s.Name(admin.ID()) != "laptop" || !s.Recoverable() || s.VaultKey() != vaultKey.Public() {
		t.Fatalf("state: name %q, recoverable %v", s.Name(admin.ID()), s.Recoverable())
	}
	// An add without a name stays format 1, readable by older devices.
	if r := s.Next(admin, Record{Op: OpAdd, Device: identity(t, 2).ID(), Role: RoleMember}, 2); r.Format != Format {
		t.Errorf("unnamed add is format %d, want %d", r.Format, Format)
	}
	// A format-2 operation in a format-1 record is refused.
	r := s.Next(admin, Record{Op: OpSettings, Flags: FlagRecoverable}, 2)
	r.Format, r.Flags = Format, 0
	r.Sign(admin)
	if err := s.Apply(r); !errors.Is(err, ErrBadOp) {
		t.Errorf("settings in format 1: got %v, want %v", err, ErrBadOp)
	}
	// A format number that does not match the array's length is refused.
	bad := g2
	bad.Format = Format
	bad.Name, bad.Flags = "", 0
	enc := bad.Encode()
	enc[1] = Format2 // a 16-field array claiming format 2
	if _, err := Decode(enc); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("format 2 in a format-1 array: got %v, want %v", err, ErrUnknownFormat)
	}
}

func TestRecover(t *testing.T) {
	s, admin, dev, epoch1 := recoverableFixture(t)
	fresh := identity(t, 7)

	r, err := s.Recover(seeded(6), fresh, vaultRoot, "new laptop", 4000)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, r)
	if role, ok := s.Role(fresh.ID()); !ok || role != RoleAdmin {
		t.Fatalf("recovered device: role %v, member %v; want admin", role, ok)
	}
	if s.Name(fresh.ID()) != "new laptop" {
		t.Errorf("name %q", s.Name(fresh.ID()))
	}
	// The recovered device reads every epoch from the log and its own key.
	secrets, err := s.EpochSecrets(fresh, vaultRoot.Epoch0())
	if err != nil {
		t.Fatal(err)
	}
	if secrets[1] != epoch1 || secrets[0] != vaultRoot.Epoch0() {
		t.Fatalf("recovered device's epoch secrets do not match the vault's")
	}
	// It is an admin: it admits and revokes.
	other := identity(t, 8)
	op, err := s.AddOp(seeded(7), other.ID(), RoleMember, secrets)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, s.Next(fresh, op, 5000))
	rop, _, err := s.RevokeOp(seeded(8), admin.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, s.Next(fresh, rop, 6000))
	// A second recovery after that revocation still opens every epoch.
	again := identity(t, 9)
	r2, err := s.Recover(seeded(9), again, vaultRoot, "", 7000)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, r2)
	got, err := s.EpochSecrets(again, vaultRoot.Epoch0())
	if err != nil || len(got) != 3 || got[1] != epoch1 {
		t.Fatalf("after two revocations: %d secrets, %v", len(got), err)
	}

	t.Run("refused", func(t *testing.T) {
		s, _, dev2, _ := recoverableFixture(t)
		if _, err := s.Recover(seeded(1), fresh, keys.RootSecret{9}, "", 1); !errors.Is(err, ErrVaultKey) {
			t.Errorf("another vault's phrase: got %v, want %v", err, ErrVaultKey)
		}
		if r, err := s.Recover(seeded(1), dev2, vaultRoot, "", 1); err != nil {
			t.Fatal(err)
		} else if err := s.Apply(r); !errors.Is(err, ErrRevoked) {
			t.Errorf("recovery of a revoked device: got %v, want %v", err, ErrRevoked)
		}
		r, err := s.Recover(seeded(1), fresh, vaultRoot, "", 1)
		if err != nil {
			t.Fatal(err)
		}
		// The vault signature binds the record: moved to another device,
		// or re-signed after a change, it fails.
		moved := r
		moved.Device, moved.Signer = dev.ID(), dev.ID()
		moved.Sign(dev)
		if err := s.Apply(moved); !errors.Is(err, ErrVaultSignature) {
			t.Errorf("vault signature moved to another device: got %v, want %v", err, ErrVaultSignature)
		}
		member := r
		member.Role = RoleMember
		member.Sign(fresh)
		if err := s.Apply(member); !errors.Is(err, ErrBadOp) {
			t.Errorf("recovery as a member: got %v, want %v", err, ErrBadOp)
		}
		// Without the vault proof it is nothing.
		noProof := r
		noProof.VaultKey, noProof.VaultSig = nil, nil
		noProof.Sign(fresh)
		if err := s.Apply(noProof); !errors.Is(err, ErrVaultKey) {
			t.Errorf("recovery without the vault proof: got %v, want %v", err, ErrVaultKey)
		}
	})

	t.Run("not recoverable", func(t *testing.T) {
		old, admin, _ := fixture(t) // a format-1 vault
		if _, err := old.Recover(seeded(1), fresh, vaultRoot, "", 1); !errors.Is(err, ErrNotRecoverable) {
			t.Fatalf("got %v, want %v", err, ErrNotRecoverable)
		}
		// A hand-made recovery record is refused all the same.
		rs, _, _, _ := recoverableFixture(t)
		r, err := rs.Recover(seeded(1), fresh, vaultRoot, "", 1)
		if err != nil {
			t.Fatal(err)
		}
		r.Seq, r.Prev, r.Keys = old.Seq+1, old.Head.Bytes(), nil
		r.VaultSig = vaultKey.Sign(r.vaultSigningBytes())
		r.Sign(fresh)
		if err := old.Apply(r); !errors.Is(err, ErrNotRecoverable) {
			t.Errorf("got %v, want %v", err, ErrNotRecoverable)
		}
		// A format-1 vault's revocations seal to members only.
		op, _, err := old.RevokeOp(seeded(2), identity(t, 2).ID(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(op.Keys) != 1 || op.Keys[0].Device != admin.ID() {
			t.Errorf("revocation in a format-1 vault seals to %d recipients", len(op.Keys))
		}
	})
}

func TestRevokeSealsToTheVaultKey(t *testing.T) {
	s, _, _, _ := recoverableFixture(t)
	last := s.Records()[len(s.Records())-1]
	var toVault int
	for _, k := range last.Keys {
		if k.Device == vaultKey.Public().Recipient() {
			toVault++
		}
	}
	if toVault != 1 || len(last.Keys) != 2 {
		t.Fatalf("revocation seals %d keys, %d to the vault key; want 2 and 1", len(last.Keys), toVault)
	}
	// A revocation that leaves the vault key out is refused.
	s2 := NewState(vault)
	admin, dev := identity(t, 1), identity(t, 2)
	apply(t, s2, GenesisWith(admin, vaultKey, "", FlagRecoverable, 1))
	apply(t, s2, s2.Next(admin, Record{Op: OpAdd, Device: dev.ID(), Role: RoleMember}, 2))
	secret, _ := keys.NewEpochSecret(seeded(3))
	sealed, err := keys.SealEpochSecret(seeded(4), admin.ID(), vault, 1, secret)
	if err != nil {
		t.Fatal(err)
	}
	r := s2.Next(admin, Record{Op: OpRevoke, Device: dev.ID(), Epoch: 1, Keys: []SealedKey{{Device: admin.ID(), Sealed: sealed}}}, 3)
	if err := s2.Apply(r); !errors.Is(err, ErrBadOp) {
		t.Errorf("got %v, want %v", err, ErrBadOp)
	}
}

func TestSetRole(t *testing.T) {
	s, admin, dev, _ := recoverableFixture(t)
	third := identity(t, 3)
	admit(t, s, admin, third, RoleMember, "")
	// A member cannot promote anyone, itself included.
	if err := s.Apply(s.Next(third, Record{Op: OpSetRole, Device: third.ID(), Role: RoleAdmin}, 2)); !errors.Is(err, ErrNotAdmin) {
		t.Errorf("member promoting itself: got %v, want %v", err, ErrNotAdmin)
	}
	// The last admin cannot step down.
	if err := s.Apply(s.Next(admin, Record{Op: OpSetRole, Device: admin.ID(), Role: RoleMember}, 2)); !errors.Is(err, ErrLastAdmin) {
		t.Errorf("last admin stepping down: got %v, want %v", err, ErrLastAdmin)
	}
	apply(t, s, s.Next(admin, Record{Op: OpSetRole, Device: third.ID(), Role: RoleAdmin}, 3))
	if got := s.Admins(); len(got) != 2 {
		t.Fatalf("admins: %d, want 2", len(got))
	}
	// The new admin admits devices; with two admins, one may step down.
	secrets, err := s.EpochSecrets(third, vaultRoot.Epoch0())
	if err != nil {
		t.Fatal(err)
	}
	op, err := s.AddOp(seeded(3), identity(t, 4).ID(), RoleMember, secrets)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, s.Next(third, op, 4))
	apply(t, s, s.Next(admin, Record{Op: OpSetRole, Device: admin.ID(), Role: RoleMember}, 5))
	op5, err := s.AddOp(seeded(5), identity(t, 5).ID(), RoleMember, secrets)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(s.Next(admin, op5, 6)); !errors.Is(err, ErrNotAdmin) {
		t.Errorf("former admin admitting: got %v, want %v", err, ErrNotAdmin)
	}
	if err := s.Apply(s.Next(third, Record{Op: OpSetRole, Device: admin.ID(), Role: RoleMember}, 6)); !errors.Is(err, ErrBadOp) {
		t.Errorf("a role it already has: got %v, want %v", err, ErrBadOp)
	}
	if err := s.Apply(s.Next(third, Record{Op: OpSetRole, Device: dev.ID(), Role: RoleAdmin}, 6)); !errors.Is(err, ErrBadOp) {
		t.Errorf("promoting a revoked device: got %v, want %v", err, ErrBadOp)
	}
}

func TestRename(t *testing.T) {
	s, admin, _, _ := recoverableFixture(t)
	m, n := identity(t, 3), identity(t, 4)
	admit(t, s, admin, m, RoleMember, "tablet")
	admit(t, s, admin, n, RoleMember, "")
	apply(t, s, s.Next(m, Record{Op: OpRename, Device: m.ID(), Name: "kitchen tablet"}, 2))
	apply(t, s, s.Next(admin, Record{Op: OpRename, Device: n.ID(), Name: "Zoë's phone"}, 3))
	if s.Name(m.ID()) != "kitchen tablet" || s.Name(n.ID()) != "Zoë's phone" {
		t.Fatalf("names %q, %q", s.Name(m.ID()), s.Name(n.ID()))
	}
	if err := s.Apply(s.Next(m, Record{Op: OpRename, Device: n.ID(), Name: "mine"}, 4)); !errors.Is(err, ErrNotAdmin) {
		t.Errorf("member renaming another: got %v, want %v", err, ErrNotAdmin)
	}
	for _, name := range []string{"", " pad", "tab\there", strings.Repeat("x", MaxNameLen+1), "\xff", "evil\u202egnp.exe", "zero\u200bwidth", "two\u2028lines"} {
		if err := s.Apply(s.Next(m, Record{Op: OpRename, Device: m.ID(), Name: name}, 4)); !errors.Is(err, ErrBadName) {
			t.Errorf("name %q: got %v, want %v", name, err, ErrBadName)
		}
	}
	if err := s.Apply(s.Next(admin, Record{Op: OpAddRelay, Relay: "/ip4/127.0.0.1/tcp/1", Name: "x"}, 4)); !errors.Is(err, ErrBadOp) {
		t.Errorf("a name on a relay record: got %v, want %v", err, ErrBadOp)
	}
}

func TestSettings(t *testing.T) {
	s, admin, _, _ := recoverableFixture(t)
	m := identity(t, 3)
	admit(t, s, admin, m, RoleMember, "")
	secrets, err := s.EpochSecrets(m, vaultRoot.Epoch0())
	if err != nil {
		t.Fatal(err)
	}
	addBy := func(signer *keys.Identity, seed uint64, role Role) error {
		op, err := s.AddOp(seeded(seed), identity(t, seed).ID(), role, secrets)
		if err != nil {
			t.Fatal(err)
		}
		return s.Apply(s.Next(signer, op, 2))
	}
	if err := addBy(m, 10, RoleMember); !errors.Is(err, ErrNotAdmin) {
		t.Errorf("member admitting by default: got %v, want %v", err, ErrNotAdmin)
	}
	if err := s.Apply(s.Next(m, Record{Op: OpSettings, Flags: FlagRecoverable | FlagMembersInvite}, 2)); !errors.Is(err, ErrNotAdmin) {
		t.Errorf("member changing settings: got %v, want %v", err, ErrNotAdmin)
	}
	apply(t, s, s.Next(admin, Record{Op: OpSettings, Flags: FlagRecoverable | FlagMembersInvite}, 3))
	if err := addBy(m, 11, RoleMember); err != nil {
		t.Errorf("member admitting with members-invite on: %v", err)
	}
	if err := addBy(m, 12, RoleAdmin); !errors.Is(err, ErrNotAdmin) {
		t.Errorf("member admitting an admin: got %v, want %v", err, ErrNotAdmin)
	}
	if err := s.Apply(s.Next(admin, Record{Op: OpSettings, Flags: FlagMembersInvite}, 4)); !errors.Is(err, ErrBadOp) {
		t.Errorf("turning recovery off: got %v, want %v", err, ErrBadOp)
	}
	if err := s.Apply(s.Next(admin, Record{Op: OpSettings, Flags: FlagRecoverable | 1<<40}, 4)); !errors.Is(err, ErrBadOp) {
		t.Errorf("unknown setting: got %v, want %v", err, ErrBadOp)
	}
	if err := s.Apply(s.Next(admin, Record{Op: OpAddRelay, Relay: "/ip4/127.0.0.1/tcp/1", Flags: FlagRecoverable}, 4)); !errors.Is(err, ErrBadOp) {
		t.Errorf("settings on a relay record: got %v, want %v", err, ErrBadOp)
	}
}

func TestRecoveryProof(t *testing.T) {
	s, _, dev, _ := recoverableFixture(t)
	from, to := identity(t, 7).ID(), identity(t, 8).ID()
	g := s.Records()[0]
	proof := RecoveryProof(vaultKey, from, to)
	if err := CheckRecoveryProof(g, from, to, proof); err != nil {
		t.Fatal(err)
	}
	if err := CheckRecoveryProof(g, from, dev.ID(), proof); !errors.Is(err, ErrVaultSignature) {
		t.Errorf("shown to another peer: got %v, want %v", err, ErrVaultSignature)
	}
	if err := CheckRecoveryProof(g, from, to, RecoveryProof(keys.RootSecret{9}.VaultKey(), from, to)); !errors.Is(err, ErrVaultSignature) {
		t.Errorf("another vault's key: got %v, want %v", err, ErrVaultSignature)
	}
	old, _, _ := fixture(t)
	if err := CheckRecoveryProof(old.Records()[0], from, to, proof); !errors.Is(err, ErrNotRecoverable) {
		t.Errorf("a format-1 vault, the right phrase: got %v, want %v", err, ErrNotRecoverable)
	}
	// Without the phrase, an older vault answers as any failed proof: the
	// answer says nothing of the vault.
	if err := CheckRecoveryProof(old.Records()[0], from, to, make([]byte, 64)); !errors.Is(err, ErrVaultSignature) {
		t.Errorf("a format-1 vault, no phrase: got %v, want %v", err, ErrVaultSignature)
	}
}

func TestInviteWords(t *testing.T) {
	inv, err := NewInvite(seeded(9), identity(t, 1).ID(), []string{"/ip4/127.0.0.1/tcp/1"}, 5000)
	if err != nil {
		t.Fatal(err)
	}
	a, b := identity(t, 2).ID(), identity(t, 3).ID()
	wa := inv.Words(a)
	if len(strings.Fields(wa)) != SASWords || wa != inv.Words(a) {
		t.Fatalf("words %q: want %d, the same each time", wa, SASWords)
	}
	if wa == inv.Words(b) {
		t.Errorf("two joiners get the same words %q", wa)
	}
	other, _ := NewInvite(seeded(10), inv.Inviter, nil, 5000)
	if wa == other.Words(a) {
		t.Errorf("two codes give one joiner the same words %q", wa)
	}
	// keys.Words reads 11 bits per word, big-endian: all ones is the
	// list's last word, 0x00 0x20 is index 1.
	if got := keys.Words([]byte{0xff, 0xff}, 1)[0]; got != "zoo" {
		t.Errorf("all ones: %q, want zoo", got)
	}
	if got := keys.Words([]byte{0x00, 0x20}, 1)[0]; got != "ability" {
		t.Errorf("index 1: %q, want ability", got)
	}
}
