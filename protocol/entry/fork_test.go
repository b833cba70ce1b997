package entry

import (
	"bytes"
	"errors"
	"testing"
)

func TestDetectFork(t *testing.T) {
	f := newFixture(t)
	e1 := mustNew(t, f.config(Head{}), sampleBody(f.other.ID()))
	cfg := f.config(Head{})
	cfg.Time++ // same seq, another entry
	e1b := mustNew(t, cfg, sampleBody(f.other.ID()))
	e2 := mustNew(t, f.config(e1.Head()), sampleBody(f.other.ID()))
	otherCfg := f.config(Head{})
	otherCfg.Identity = f.other
	o1 := mustNew(t, otherCfg, sampleBody(f.id.ID()))

	// Validate reports the conflicting entry as a replay; DetectFork turns
	// it into a proof.
	if _, err := Validate(e1b.Bytes(), f.vault, e1.Head()); !errors.Is(err, ErrSeqReplay) {
		t.Fatalf("Validate of forked entry: got %v, want ErrSeqReplay", err)
	}

	badSig := func() *Entry {
		w := wireOf(t, e1b)
		w.Sig[0] ^= 1
		e, err := Decode(marshal(&w))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}()

	tests := []struct {
		name             string
		stored, incoming *Entry
		want             error
	}{
		{"fork", e1, e1b, nil},
		{"fork reversed", e1b, e1, nil},
		{"same entry", e1, e1, ErrNotFork},
		{"different sequence", e1, e2, ErrNotFork},
		{"different author", e1, o1, ErrNotFork},
		{"incoming badly signed", e1, badSig, ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := DetectFork(tt.stored, tt.incoming)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got error %v, want %v", err, tt.want)
			}
			if err != nil {
				return
			}
			if err := p.Verify(); err != nil {
				t.Fatalf("Verify: got %v, want nil", err)
			}
			if bytes.Compare(p.A.CID().Bytes(), p.B.CID().Bytes()) >= 0 {
				t.Errorf("got A %s before B %s, want CID order", p.A.CID(), p.B.CID())
			}
			q, err := DecodeForkProof(p.Bytes())
			if err != nil {
				t.Fatalf("DecodeForkProof: got %v, want nil", err)
			}
			if !q.A.CID().Equals(p.A.CID()) || !q.B.CID().Equals(p.B.CID()) {
				t.Errorf("decoded proof differs")
			}
		})
	}

	t.Run("proof out of order", func(t *testing.T) {
		p, err := DetectFork(e1, e1b)
		if err != nil {
			t.Fatal(err)
		}
		q := &ForkProof{A: p.B, B: p.A}
		if err := q.Verify(); !errors.Is(err, ErrNotFork) {
			t.Fatalf("got %v, want ErrNotFork", err)
		}
		if _, err := DecodeForkProof(q.Bytes()); !errors.Is(err, ErrNotFork) {
			t.Fatalf("decoding: got %v, want ErrNotFork", err)
		}
	})
}

func TestForkProofRejectsEmptyEntries(t *testing.T) {
	if err := (&ForkProof{A: &Entry{}, B: &Entry{}}).Verify(); err == nil {
		t.Fatal("got nil, want an error")
	}
	if _, err := DetectFork(nil, nil); !errors.Is(err, ErrNotFork) {
		t.Fatalf("got %v, want ErrNotFork", err)
	}
}

// FuzzDecodeForkProof: a fork proof arrives from other devices or relays
// as evidence against a key. DecodeForkProof never panics; whatever it
// accepts verifies, is canonical (Bytes gives the input back), and names
// two different entries of one author and one sequence number.
func FuzzDecodeForkProof(f *testing.F) {
	fx := newFixture(f)
	e1 := mustNew(f, fx.config(Head{}), sampleBody(fx.other.ID()))
	cfg := fx.config(Head{})
	cfg.Time++
	e1b := mustNew(f, cfg, &Body{})
	p, err := DetectFork(e1, e1b)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(p.Bytes())
	f.Add((&ForkProof{A: p.B, B: p.A}).Bytes()) // out of CID order
	f.Add((&ForkProof{A: e1, B: e1}).Bytes())   // the same entry twice
	f.Add([]byte{})
	f.Add([]byte{0x82, 0x40, 0x40})
	f.Add([]byte{0x82, 0x5a, 0xff, 0xff, 0xff, 0xff}) // hostile byte-string length
	f.Fuzz(func(t *testing.T, data []byte) {
		q, err := DecodeForkProof(data)
		if err != nil {
			return
		}
		if err := q.Verify(); err != nil {
			t.Fatalf("decoded proof does not verify: %v", err)
		}
		if !bytes.Equal(q.Bytes(), data) {
			t.Fatalf("decoded proof re-encodes to %x, input %x", q.Bytes(), data)
		}
		if q.A.Author() != q.B.Author() || q.A.Seq() != q.B.Seq() || q.A.CID().Equals(q.B.CID()) {
			t.Fatalf("proof of two entries that are not a fork")
		}
	})
}
