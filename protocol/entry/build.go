package entry

import (
	"errors"
	"fmt"
	"io"

	"github.com/weftsync/weft/protocol/keys"
)

// Config is what New needs besides the body.
type Config struct {
	// Identity is the author's device key; it signs the entry.
	Identity *keys.Identity
	// Vault is the vault the entry belongs to.
	Vault keys.VaultID
	// Prev is the author's current head in this vault (Entry.Head of its
	// last entry); the zero Head for the author's first entry. The new entry
	// gets sequence Prev.Seq+1 and links to Prev.CID.
	Prev Head
	// Clock is the entry's Lamport clock: greater than Prev.Clock and than
	// every clock the author has seen.
	Clock uint64
	// Keys are the current epoch's keys; Keys.Body seals the body and
	// Keys.Epoch is recorded in the entry.
	Keys keys.EpochKeys
	// Time is the author's wall-clock time in unix milliseconds.
	Time int64
	// Rand supplies the 24-byte body nonce (crypto/rand.Reader in
	// production). It must never repeat a nonce under one key.
	Rand io.Reader
}

func (c *Config) validate() error {
	if c.Identity == nil {
		return errors.New("config: no identity")
	}
	if c.Rand == nil {
		return errors.New("config: no nonce source")
	}
	if c.Prev.Seq > 0 {
		if err := checkCID(c.Prev.CID, entryCIDPrefix, "previous entry"); err != nil {
			return fmt.Errorf("config: %w", err)
		}
	}
	if c.Clock <= c.Prev.Clock {
		return fmt.Errorf("config: clock %d after %d: %w", c.Clock, c.Prev.Clock, ErrClockNotIncreasing)
	}
	return nil
}

// New seals body, derives the public version headers from it, signs the
// result as cfg.Identity and returns the entry. It checks everything
// Validate and OpenBody would check, so an entry New returns is valid
// against cfg.Prev and opens with cfg.Keys. New neither modifies nor
// retains body.
func New(cfg Config, body *Body) (*Entry, error) { return build(cfg, body, true) }

// TestOnlyNewUnchecked builds and signs an entry like New but skips the
// body's validation, so tests can play a hostile author whose signed entry
// carries a body that every receiver must reject (a path like "../x").
// Nothing outside tests may call it.
func TestOnlyNewUnchecked(cfg Config, body *Body) (*Entry, error) { return build(cfg, body, false) }

func build(cfg Config, body *Body, checkBody bool) (*Entry, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("building entry: %w", err)
	}
	author := cfg.Identity.ID()
	seq := cfg.Prev.Seq + 1
	if checkBody {
		if err := body.validate(author, seq); err != nil {
			return nil, fmt.Errorf("building entry: %w", err)
		}
	}
	sealed, err := seal(encodeBody(body), &cfg.Keys.Body, bodyAD(cfg.Vault, author, seq, cfg.Keys.Epoch), cfg.Rand)
	if err != nil {
		return nil, fmt.Errorf("building entry: %w", err)
	}
	if len(sealed) > MaxBodySize {
		return nil, fmt.Errorf("building entry: body of %d bytes, limit %d: %w", len(sealed), MaxBodySize, ErrBodyTooLarge)
	}
	format := uint64(FormatV1)
	for i := range body.Versions {
		if body.Versions[i].HasPieces() {
			format = FormatV2
		}
	}
	if body.Author != "" {
		format = FormatV3
	}
	w := wireEntry{
		Format: format,
		Vault:  cfg.Vault[:],
		Author: author[:],
		Seq:    seq,
		Clock:  cfg.Clock,
		Epoch:  cfg.Keys.Epoch,
		Time:   cfg.Time,
		Body:   sealed,
		Sig:    make([]byte, sigSize), // zero until signed below
	}
	if seq > 1 {
		w.Prev = cfg.Prev.CID.Bytes()
	}
	w.Headers = make([]wireHeader, len(body.Versions))
	for i := range body.Versions {
		v := &body.Versions[i]
		h := &w.Headers[i]
		h.Supersedes = toWireIDs(v.Supersedes)
		if len(v.Chunks) > 0 {
			h.Refs = make([][]byte, len(v.Chunks))
			for j, c := range v.Chunks {
				h.Refs[j] = c.CID.Bytes()
			}
		}
	}
	raw := marshal(&w) // signature still zero
	if len(raw) > MaxEntrySize {
		return nil, fmt.Errorf("building entry: %d bytes, limit %d: %w", len(raw), MaxEntrySize, ErrEntryTooLarge)
	}
	buf := getBuf()
	buf.Grow(len(sigDomain) + len(raw))
	sig := cfg.Identity.Sign(appendSigningInput(buf.AvailableBuffer(), raw))
	putBuf(buf)
	copy(raw[len(raw)-sigSize:], sig)
	// Decoded as anything received is (its checks are New's invariant),
	// keeping raw rather than a copy of it.
	e, err := decodeOwned(raw, true)
	if err != nil {
		panic("entry: invariant: New built an entry Decode rejects: " + err.Error())
	}
	return e, nil
}
