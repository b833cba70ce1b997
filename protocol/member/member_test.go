package member

import (
	"bytes"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weftsync/weft/protocol/keys"
)

var update = flag.Bool("update", false, "rewrite golden files")

// seeded returns a deterministic byte source for keys and secrets.
func seeded(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	s[0] = byte(seed)
	return rand.NewChaCha8(s)
}

func identity(t *testing.T, seed uint64) *keys.Identity {
	t.Helper()
	id, err := keys.GenerateIdentity(seeded(seed))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// vaultRoot is the root secret of the test vault; vaultKey signs its
// genesis, and vault is its ID.
var (
	vaultRoot = keys.RootSecret{1, 2, 3}
	vaultKey  = vaultRoot.VaultKey()
	vault     = vaultRoot.Vault().ID
)

// fixture is a vault with an admin and one admitted member.
func fixture(t *testing.T) (*State, *keys.Identity, *keys.Identity) {
	t.Helper()
	admin, dev := identity(t, 1), identity(t, 2)
	s := NewState(vault)
	if err := s.Apply(Genesis(admin, vaultKey, 1000)); err != nil {
		t.Fatalf("genesis: %v", err)
	}
	if err := s.Apply(s.Next(admin, Record{Op: OpAdd, Device: dev.ID(), Role: RoleMember}, 2000)); err != nil {
		t.Fatalf("add: %v", err)
	}
	return s, admin, dev
}

func TestApplyAccepts(t *testing.T) {
	s, admin, dev := fixture(t)
	if !s.IsMember(admin.ID()) || !s.IsMember(dev.ID()) {
		t.Fatalf("got members %v, want admin and device", s.Members())
	}
	if r, _ := s.Role(admin.ID()); r != RoleAdmin {
		t.Fatalf("got admin role %v, want admin", r)
	}
	relay := "/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWxyz"
	revoke, _, err := s.RevokeOp(seeded(5), dev.ID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []Record{{Op: OpAddRelay, Relay: relay}, revoke} {
		if err := s.Apply(s.Next(admin, op, 3000)); err != nil {
			t.Fatalf("%s: %v", op.Op, err)
		}
	}
	if s.IsMember(dev.ID()) || !s.IsRevoked(dev.ID()) || s.Epoch != 1 {
		t.Fatalf("after revoke: member=%v revoked=%v epoch=%d", s.IsMember(dev.ID()), s.IsRevoked(dev.ID()), s.Epoch)
	}
	if got := s.Relays(); len(got) != 1 || got[0] != relay {
		t.Fatalf("got relays %v, want [%s]", got, relay)
	}
	// Replaying the log into a fresh state gives the same head.
	s2 := NewState(vault)
	for _, r := range s.Records() {
		d, err := Decode(r.Encode())
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if err := s2.Apply(d); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	if !s2.Head.Equals(s.Head) {
		t.Fatalf("replayed head %s, want %s", s2.Head, s.Head)
	}
}

func TestApplyRejects(t *testing.T) {
	s, admin, dev := fixture(t)
	outsider := identity(t, 3)
	tests := []struct {
		name string
		rec  func() Record
		want error
	}{
		{"other vault", func() Record {
			r := s.Next(admin, Record{Op: OpAdd, Device: outsider.ID(), Role: RoleMember}, 1)
			r.Vault[0] ^= 1
			r.Sign(admin)
			return r
		}, ErrOtherVault},
		{"sequence gap", func() Record {
			r := s.Next(admin, Record{Op: OpAdd, Device: outsider.ID(), Role: RoleMember}, 1)
			r.Seq++
			r.Sign(admin)
			return r
		}, ErrSequence},
		{"replay", func() Record { return s.Records()[1] }, ErrSequence},
		{"prev mismatch", func() Record {
			r := s.Next(admin, Record{Op: OpAdd, Device: outsider.ID(), Role: RoleMember}, 1)
			r.Prev[5] ^= 1
			r.Sign(admin)
			return r
		}, ErrPrevMismatch},
		{"bad signature", func() Record {
			r := s.Next(admin, Record{Op: OpAdd, Device: outsider.ID(), Role: RoleMember}, 1)
			r.Time++
			return r
		}, ErrBadSignature},
		{"not admin", func() Record { return s.Next(dev, Record{Op: OpAdd, Device: outsider.ID(), Role: RoleMember}, 1) }, ErrNotAdmin},
		{"outsider signs", func() Record { return s.Next(outsider, Record{Op: OpAdd, Device: outsider.ID(), Role: RoleAdmin}, 1) }, ErrNotAdmin},
		{"add twice", func() Record { return s.Next(admin, Record{Op: OpAdd, Device: dev.ID(), Role: RoleMember}, 1) }, ErrBadOp},
		{"bad role", func() Record { return s.Next(admin, Record{Op: OpAdd, Device: outsider.ID(), Role: 9}, 1) }, ErrBadOp},
		{"revoke non-member", func() Record { return s.Next(admin, Record{Op: OpRevoke, Device: outsider.ID(), Epoch: 1}, 1) }, ErrBadOp},
		{"revoke self", func() Record { return s.Next(admin, Record{Op: OpRevoke, Device: admin.ID(), Epoch: 1}, 1) }, ErrBadOp},
		{"revoke skips epoch", func() Record { return s.Next(admin, Record{Op: OpRevoke, Device: dev.ID(), Epoch: 2}, 1) }, ErrBadOp},
		{"second genesis", func() Record { return s.Next(admin, Record{Op: OpGenesis, Device: admin.ID(), Role: RoleAdmin}, 1) }, ErrBadOp},
		{"unknown op", func() Record { return s.Next(admin, Record{Op: 77}, 1) }, ErrBadOp},
		{"unknown format", func() Record {
			r := s.Next(admin, Record{Op: OpAdd, Device: outsider.ID(), Role: RoleMember}, 1)
			r.Format = 4
			r.Sign(admin)
			return r
		}, ErrUnknownFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.Head
			err := s.Apply(tt.rec())
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if !s.Head.Equals(before) {
				t.Fatalf("state changed after a rejected record")
			}
		})
	}
	t.Run("genesis must admit its signer", func(t *testing.T) {
		r := Record{Format: Format, Vault: vault, Seq: 1, Op: OpGenesis, Device: dev.ID(), Role: RoleAdmin}
		r.Sign(admin)
		if err := NewState(vault).Apply(r); !errors.Is(err, ErrBadOp) {
			t.Fatalf("got %v, want %v", err, ErrBadOp)
		}
	})
	t.Run("revoked device cannot be re-added", func(t *testing.T) {
		s, admin, dev := fixture(t)
		op, _, err := s.RevokeOp(seeded(5), dev.ID(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(s.Next(admin, op, 1)); err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(s.Next(admin, Record{Op: OpAdd, Device: dev.ID(), Role: RoleMember}, 1)); !errors.Is(err, ErrRevoked) {
			t.Fatalf("got %v, want %v", err, ErrRevoked)
		}
	})
}

func TestDecodeRejects(t *testing.T) {
	s, _, _ := fixture(t)
	good := s.Records()[1].Encode()
	if _, err := Decode(append(bytes.Repeat([]byte{0}, MaxRecordSize), 0)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversize: got %v, want %v", err, ErrTooLarge)
	}
	// Re-encode the Seq (a small uint) in a longer form: valid CBOR, not canonical.
	var nonCanon []byte
	i := bytes.Index(good, []byte{0x02, 0x58}) // Seq=2 followed by the Prev byte string header
	if i < 0 {
		t.Fatal("fixture layout changed; adjust the test")
	}
	nonCanon = append(append(append([]byte{}, good[:i]...), 0x18, 0x02), good[i+1:]...)
	if _, err := Decode(nonCanon); !errors.Is(err, ErrNonCanonical) {
		t.Errorf("non-canonical: got %v, want %v", err, ErrNonCanonical)
	}
	if _, err := Decode(good[:len(good)-1]); err == nil {
		t.Errorf("truncated: got nil error")
	}
}

func TestGoldenRecord(t *testing.T) {
	s := revokedFixture(t)
	var b strings.Builder
	for _, r := range s.Records() {
		b.WriteString(hexString(r.Encode()) + "\n" + r.CID().String() + "\n")
	}
	path := filepath.Join("testdata", "records.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if b.String() != string(want) {
		t.Fatalf("membership record encoding changed:\ngot\n%s\nwant\n%s", b.String(), want)
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}

func TestInvite(t *testing.T) {
	inviter, joiner, other := identity(t, 1), identity(t, 2), identity(t, 3)
	inv, err := NewInvite(seeded(9), inviter.ID(), []string{"/ip4/127.0.0.1/tcp/4001"}, 5000)
	if err != nil {
		t.Fatal(err)
	}
	code := inv.String()
	// Whitespace and case do not matter.
	mangled := strings.ToUpper(code[:20]) + "\n  " + code[20:]
	got, err := ParseInvite(mangled)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if got.Secret != inv.Secret || got.Inviter != inv.Inviter || got.Expires != inv.Expires || got.Addrs[0] != inv.Addrs[0] {
		t.Fatalf("got %+v, want %+v", got, inv)
	}
	if err := got.CheckExpiry(4999); err != nil {
		t.Errorf("before expiry: %v", err)
	}
	if err := got.CheckExpiry(5000); !errors.Is(err, ErrInviteExpired) {
		t.Errorf("at expiry: got %v, want %v", err, ErrInviteExpired)
	}
	if err := inv.CheckProof(joiner.ID(), got.Proof(joiner.ID())); err != nil {
		t.Errorf("proof: %v", err)
	}
	if err := inv.CheckProof(other.ID(), got.Proof(joiner.ID())); !errors.Is(err, ErrInviteProof) {
		t.Errorf("proof replayed by another device: got %v, want %v", err, ErrInviteProof)
	}
	secret := []byte("root secret bytes, 32 of them...")
	sealed, err := inv.Wrap(seeded(4), joiner.ID(), secret)
	if err != nil {
		t.Fatal(err)
	}
	if opened, err := got.Unwrap(joiner.ID(), sealed); err != nil || !bytes.Equal(opened, secret) {
		t.Fatalf("unwrap: %v", err)
	}
	if _, err := got.Unwrap(other.ID(), sealed); !errors.Is(err, ErrInviteProof) {
		t.Errorf("unwrap by another device: got %v, want %v", err, ErrInviteProof)
	}

	bad := []struct {
		name, code string
		want       error
	}{
		{"garbage", "hello world", ErrInviteMalformed},
		{"not base32", "weft1!!!!", ErrInviteMalformed},
		{"typo", code[:30] + flip(code[30]) + code[31:], ErrInviteChecksum},
		{"truncated", code[:len(code)-3], ErrInviteChecksum},
		{"empty", "", ErrInviteMalformed},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseInvite(tt.code); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

func FuzzDecodeRecord(f *testing.F) {
	admin := must(keys.GenerateIdentity(seeded(1)))
	f.Add(Genesis(admin, vaultKey, 1).Encode())
	f.Add([]byte{0x80})
	// Format 2: a named, recoverable genesis and a recovery.
	g2 := GenesisWith(admin, vaultKey, "laptop", FlagRecoverable|FlagMembersInvite, 1)
	f.Add(g2.Encode())
	rs := NewState(vault)
	if err := rs.Apply(g2); err != nil {
		f.Fatal(err)
	}
	rec, err := rs.Recover(seeded(3), must(keys.GenerateIdentity(seeded(3))), vaultRoot, "new laptop", 2)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec.Encode())
	// Format 3: an add with the join's words.
	f.Add(rs.Next(admin, Record{Op: OpAdd, Device: keys.DeviceID{9}, Role: RoleMember, Name: "phone", Words: "abandon ability able about"}, 3).Encode())
	for _, r := range revokedFixtureRecords() {
		f.Add(r.Encode()) // revoke with sealed keys and upto; add with sealed keys
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			return
		}
		if !bytes.Equal(r.Encode(), b) {
			t.Fatalf("decoded record does not re-encode to its bytes")
		}
		_ = NewState(r.Vault).Apply(r)
	})
}

func FuzzParseInvite(f *testing.F) {
	inv, _ := NewInvite(seeded(2), keys.DeviceID{7}, []string{"/ip4/127.0.0.1/tcp/1"}, 99)
	f.Add(inv.String())
	f.Add("weft1")
	f.Add("weft1aaaaaaaaaaaaaaa")
	f.Fuzz(func(t *testing.T, s string) {
		inv, err := ParseInvite(s)
		if err != nil {
			return
		}
		again, err := ParseInvite(inv.String())
		if err != nil || again.Secret != inv.Secret || again.Expires != inv.Expires {
			t.Fatalf("parsed invite does not round-trip: %v", err)
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
