package chunk

import (
	"crypto/cipher"
	"encoding/hex"

	"github.com/weftsync/weft/protocol/keys"
	"golang.org/x/crypto/chacha20poly1305"
	"lukechampine.com/blake3/guts"
)

// Keys are the chunk keys of one key epoch. They hold only what chunks
// need, so chunk code never sees the epoch's body key.
type Keys struct {
	Epoch   uint32   // written into each envelope; Open refuses others
	Chunk   [32]byte // root of the per-chunk AEAD keys
	ChunkID [32]byte // BLAKE3 key of the plaintext identity
}

// KeysFrom takes the chunk keys out of an epoch's keys.
func KeysFrom(ek keys.EpochKeys) Keys {
	return Keys{Epoch: ek.Epoch, Chunk: ek.Chunk, ChunkID: ek.ChunkID}
}

// ID is a chunk's plaintext identity: the BLAKE3 hash of the plaintext keyed
// with the epoch's ChunkID key. Inside one epoch of one vault, equal IDs mean
// equal plaintexts; without the key an ID reveals nothing about the
// plaintext, so it travels in clear in the envelope header.
type ID [32]byte

func (id ID) String() string { return hex.EncodeToString(id[:]) }

// PlainID returns the identity of plaintext under k.
func PlainID(k Keys, plaintext []byte) ID {
	kw := keyWords(&k.ChunkID)
	return ID(blake3Sum256(plaintext, &kw, guts.FlagKeyedHash))
}

// sealContext is the domain separator of the per-chunk AEAD key and nonce
// derivation. It is part of the format.
const sealContext = "weft/v1 chunk-seal"

// sealKey derives a chunk's XChaCha20-Poly1305 key and nonce:
//
//	out = BLAKE3(key = k.Chunk, "weft/v1 chunk-seal" || id), 56 bytes
//	aead key = out[0:32], nonce = out[32:56]
//
// A key is unique per plaintext, so the nonce could be fixed; deriving it
// costs nothing and keeps the scheme safe if keys were ever reused.
func sealKey(k Keys, id ID) (key [32]byte, nonce [24]byte) {
	// The message is 18+32 = 50 bytes, one BLAKE3 block, so the hash is a
	// single compression of the root node: no Hasher, no allocation.
	var block [guts.BlockSize]byte
	n := copy(block[:], sealContext)
	n += copy(block[n:], id[:])
	words := guts.CompressNode(guts.Node{
		CV:       keyWords(&k.Chunk),
		Block:    guts.BytesToWords(block),
		BlockLen: uint32(n),
		Flags:    guts.FlagChunkStart | guts.FlagChunkEnd | guts.FlagRoot | guts.FlagKeyedHash,
	})
	out := guts.WordsToBytes(words)
	copy(key[:], out[:32])
	copy(nonce[:], out[32:56])
	return key, nonce
}

// newAEAD returns the XChaCha20-Poly1305 AEAD for a derived key.
func newAEAD(key [32]byte) (cipher.AEAD, error) { return chacha20poly1305.NewX(key[:]) }

func mustAEAD(key [32]byte) cipher.AEAD {
	a, err := newAEAD(key)
	if err != nil {
		panic("chunk: invariant: XChaCha20-Poly1305 rejects a 32-byte key: " + err.Error())
	}
	return a
}
