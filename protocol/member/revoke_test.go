package member

import (
	"bytes"
	"errors"
	"testing"

	"github.com/weftsync/weft/protocol/keys"
)

// revokedFixtureRecords is a deterministic log: genesis by the admin (seed
// 1), add device 2, add device 3, revoke device 2 keeping its entries up
// to 7 (epoch 1), add device 4 (which receives epoch 1's secret).
func revokedFixtureRecords() []Record {
	admin := must(keys.GenerateIdentity(seeded(1)))
	s := NewState(vault)
	apply := func(r Record) {
		if err := s.Apply(r); err != nil {
			panic(err)
		}
	}
	apply(Genesis(admin, vaultKey, 1000))
	for _, seed := range []uint64{2, 3} {
		d := must(keys.GenerateIdentity(seeded(seed))).ID()
		apply(s.Next(admin, Record{Op: OpAdd, Device: d, Role: RoleMember}, 2000))
	}
	op, _, err := s.RevokeOp(seeded(10), must(keys.GenerateIdentity(seeded(2))).ID(), 7)
	if err != nil {
		panic(err)
	}
	apply(s.Next(admin, op, 3000))
	secrets, err := s.EpochSecrets(admin, keys.RootSecret{1}.Epoch0())
	if err != nil {
		panic(err)
	}
	add, err := s.AddOp(seeded(11), must(keys.GenerateIdentity(seeded(4))).ID(), RoleMember, secrets)
	if err != nil {
		panic(err)
	}
	apply(s.Next(admin, add, 4000))
	return s.Records()
}

func revokedFixture(t *testing.T) *State {
	t.Helper()
	s := NewState(vault)
	for _, r := range revokedFixtureRecords() {
		d, err := Decode(r.Encode())
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if err := s.Apply(d); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	return s
}

func TestRevokeEpochSecrets(t *testing.T) {
	s := revokedFixture(t)
	root := keys.RootSecret{1}
	admin, revoked, kept, late := identity(t, 1), identity(t, 2), identity(t, 3), identity(t, 4)
	if s.Epoch != 1 || s.IsMember(revoked.ID()) || !s.IsRevoked(revoked.ID()) {
		t.Fatalf("got epoch %d, revoked member=%v", s.Epoch, s.IsMember(revoked.ID()))
	}
	if u, ok := s.Upto(revoked.ID()); !ok || u != 7 {
		t.Fatalf("Upto: got %d, %v; want 7, true", u, ok)
	}
	if _, ok := s.Upto(kept.ID()); ok {
		t.Fatal("Upto of a member: got ok")
	}
	want, err := s.EpochSecrets(admin, root.Epoch0())
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 2 || want[0] != root.Epoch0() || want[1] == want[0] {
		t.Fatalf("admin's secrets: got %d epochs", len(want))
	}
	for name, id := range map[string]*keys.Identity{"kept member": kept, "added after the revocation": late} {
		got, err := s.EpochSecrets(id, root.Epoch0())
		if err != nil || len(got) != 2 || got[1] != want[1] {
			t.Errorf("%s: got %d secrets (epoch 1 equal: %v), %v; want both epochs", name, len(got), got[1] == want[1], err)
		}
	}
	got, err := s.EpochSecrets(revoked, root.Epoch0())
	if err != nil || len(got) != 1 {
		t.Errorf("revoked device: got %d secrets, %v; want epoch 0 only", len(got), err)
	}
	if _, ok := got[1]; ok {
		t.Error("the revoked device recovered the new epoch's secret")
	}
	// A sealed key addressed to a device that does not open is reported.
	bad := NewState(vault)
	for i, r := range s.Records() {
		if r.Op == OpRevoke {
			r.Keys = append([]SealedKey(nil), r.Keys...)
			for j := range r.Keys {
				r.Keys[j].Sealed = bytes.Clone(r.Keys[j].Sealed)
				r.Keys[j].Sealed[50] ^= 1
			}
			r.Sign(admin)
		}
		if i > 0 {
			r.Prev = bad.Head.Bytes()
			r.Sign(admin)
		}
		if err := bad.Apply(r); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if _, err := bad.EpochSecrets(kept, root.Epoch0()); !errors.Is(err, keys.ErrSealedSecret) {
		t.Errorf("altered sealed key: got %v, want %v", err, keys.ErrSealedSecret)
	}
}

func TestRevokeKeyRules(t *testing.T) {
	admin, dev, other := identity(t, 1), identity(t, 2), identity(t, 3)
	base := func(t *testing.T) *State {
		s := NewState(vault)
		for _, r := range []Record{Genesis(admin, vaultKey, 1)} {
			if err := s.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
		for _, d := range []*keys.Identity{dev, other} {
			if err := s.Apply(s.Next(admin, Record{Op: OpAdd, Device: d.ID(), Role: RoleMember}, 1)); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	sealed := must(keys.SealEpochSecret(seeded(3), other.ID(), vault, 1, keys.EpochSecret{1}))
	key := func(d *keys.Identity) SealedKey { return SealedKey{Device: d.ID(), Sealed: sealed} }
	sortedPair := []SealedKey{key(admin), key(other)}
	if a, o := admin.ID(), other.ID(); bytes.Compare(a[:], o[:]) > 0 {
		sortedPair[0], sortedPair[1] = sortedPair[1], sortedPair[0]
	}
	tests := []struct {
		name string
		op   Record
		want error
	}{
		{"revoke without keys", Record{Op: OpRevoke, Device: dev.ID(), Epoch: 1}, ErrBadOp},
		{"revoke missing a member", Record{Op: OpRevoke, Device: dev.ID(), Epoch: 1, Keys: []SealedKey{key(other)}}, ErrBadOp},
		{"revoke seals to the revoked", Record{Op: OpRevoke, Device: dev.ID(), Epoch: 1, Keys: []SealedKey{key(admin), key(other), key(dev)}}, ErrBadOp},
		{"revoke keys unsorted", Record{Op: OpRevoke, Device: dev.ID(), Epoch: 1, Keys: []SealedKey{sortedPair[1], sortedPair[0]}}, ErrBadOp},
		{"revoke key twice", Record{Op: OpRevoke, Device: dev.ID(), Epoch: 1, Keys: []SealedKey{sortedPair[0], sortedPair[0]}}, ErrBadOp},
		{"revoke short sealed key", Record{Op: OpRevoke, Device: dev.ID(), Epoch: 1, Keys: []SealedKey{sortedPair[0], {Device: sortedPair[1].Device, Sealed: sealed[:10]}}}, ErrBadOp},
		{"revoke sorted and complete", Record{Op: OpRevoke, Device: dev.ID(), Epoch: 1, Upto: 9, Keys: sortedPair}, nil},
		{"add in epoch 0 with a key", Record{Op: OpAdd, Device: identity(t, 5).ID(), Role: RoleMember, Keys: []SealedKey{key(other)}}, ErrBadOp},
		{"add with upto", Record{Op: OpAdd, Device: identity(t, 5).ID(), Role: RoleMember, Upto: 1}, ErrBadOp},
		{"add with epoch", Record{Op: OpAdd, Device: identity(t, 5).ID(), Role: RoleMember, Epoch: 1}, ErrBadOp},
		{"add-relay with keys", Record{Op: OpAddRelay, Relay: "/ip4/1.2.3.4/tcp/1", Keys: []SealedKey{key(other)}}, ErrBadOp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base(t)
			if err := s.Apply(s.Next(admin, tt.op, 1)); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("add after a revocation", func(t *testing.T) {
		s := base(t)
		op, secret, err := s.RevokeOp(seeded(4), dev.ID(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(s.Next(admin, op, 1)); err != nil {
			t.Fatal(err)
		}
		late, stranger := identity(t, 6), identity(t, 7)
		if _, err := s.AddOp(seeded(5), late.ID(), RoleMember, nil); !errors.Is(err, ErrMissingEpoch) {
			t.Fatalf("AddOp without secrets: got %v, want %v", err, ErrMissingEpoch)
		}
		for name, add := range map[string]Record{
			"no keys":           {Op: OpAdd, Device: late.ID(), Role: RoleMember},
			"key to a stranger": {Op: OpAdd, Device: late.ID(), Role: RoleMember, Keys: []SealedKey{key(stranger)}},
			"two keys":          {Op: OpAdd, Device: late.ID(), Role: RoleMember, Keys: []SealedKey{key(late), key(late)}},
		} {
			if err := s.Apply(s.Next(admin, add, 1)); !errors.Is(err, ErrBadOp) {
				t.Errorf("%s: got %v, want %v", name, err, ErrBadOp)
			}
		}
		add, err := s.AddOp(seeded(5), late.ID(), RoleMember, map[uint32]keys.EpochSecret{1: secret})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(s.Next(admin, add, 1)); err != nil {
			t.Fatal(err)
		}
		got, err := s.EpochSecrets(late, keys.RootSecret{}.Epoch0())
		if err != nil || got[1] != secret {
			t.Fatalf("late device's epoch 1: got %x, %v; want %x", got[1], err, secret)
		}
	})
}

func TestCheckAuthor(t *testing.T) {
	s := revokedFixture(t)
	tests := []struct {
		name   string
		author keys.DeviceID
		seq    uint64
		want   error
	}{
		{"member", identity(t, 3).ID(), 100, nil},
		{"revoked, first entry", identity(t, 2).ID(), 1, nil},
		{"revoked, at upto", identity(t, 2).ID(), 7, nil},
		{"revoked, after upto", identity(t, 2).ID(), 8, ErrRevokedEntry},
		{"stranger", identity(t, 9).ID(), 1, ErrNotMember},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.CheckAuthor(tt.author, tt.seq); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecodeRejectsEmptyKeyList(t *testing.T) {
	s, admin, _ := fixture(t)
	r := s.Next(admin, Record{Op: OpAddRelay, Relay: "/ip4/1.2.3.4/tcp/1"}, 1)
	good := r.Encode()
	// The keys field is null (0xf6) right before the time (0x01, time 1),
	// then the vault key and vault signature, null (0xf6 0xf6), then the
	// signer (0x58 0x20).
	i := bytes.Index(good, []byte{0xf6, 0x01, 0xf6, 0xf6, 0x58, 0x20})
	if i < 0 {
		t.Fatal("fixture layout changed; adjust the test")
	}
	with := func(at int, b byte) []byte {
		out := bytes.Clone(good)
		out[at] = b
		return out
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty key list", with(i, 0x80)},
		{"empty vault key", with(i+2, 0x40)},
		{"empty vault signature", with(i+3, 0x40)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Decode(tt.b); !errors.Is(err, ErrNonCanonical) {
				t.Fatalf("got %v, want %v", err, ErrNonCanonical)
			}
		})
	}
	if _, err := Decode(good); err != nil {
		t.Fatalf("null key list: %v", err)
	}
}
