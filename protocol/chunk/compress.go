package chunk

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Compression rule. Every constant here is part of the format: devices must
// make the same choice on the same bytes or their envelopes, and CIDs,
// differ.
const (
	// samplePieces pieces of samplePiece bytes, evenly spaced over the
	// plaintext, form the sample that decides whether to try compressing
	// the whole chunk. Plaintexts up to sampleSize are tried whole.
	samplePieces = 4
	samplePiece  = 1 << 10
	sampleSize   = samplePieces * samplePiece
)

// worthIt reports whether compressing n bytes to z bytes saves enough to be
// worth a decompression on every read: at least 1/32 of n (about 3%).
func worthIt(n, z int) bool { return z < n-n/32 }

// encoderOptions pin the zstd encoding. EncodeAll's output depends only on
// these and the library version (go.mod pins it; golden vectors catch a
// change).
func encoderOptions() []zstd.EOption {
	return []zstd.EOption{
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false),
		zstd.WithSingleSegment(true),
		zstd.WithZeroFrames(false),
		zstd.WithEncoderPadding(1),
		zstd.WithLowerEncoderMem(false),
		zstd.WithAllLitEntropyCompression(false),
	}
}

// compressor is a single-threaded encoder with its sample buffer.
type compressor struct {
	enc    *zstd.Encoder
	sample [sampleSize]byte
}

// compressors pools compressors so that concurrent Seals do not queue
// behind one encoder, and the sample buffer is not allocated per chunk.
var compressors = sync.Pool{New: func() any {
	e, err := zstd.NewWriter(nil, encoderOptions()...)
	if err != nil {
		panic("chunk: invariant: zstd encoder options rejected: " + err.Error())
	}
	return &compressor{enc: e}
}}

// decoder decodes everything; DecodeAll is safe for concurrent use. The
// memory cap makes it refuse to produce more than MaxSize bytes.
var decoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(MaxSize),
		zstd.WithDecoderMaxWindow(MaxSize),
	)
	if err != nil {
		panic("chunk: invariant: zstd decoder options rejected: " + err.Error())
	}
	return d
})

// compressOrSkip returns the payload to encrypt for plaintext and whether it
// is compressed. The decision depends only on the bytes: small plaintexts
// are compressed whole; larger ones first have a fixed sample compressed
// and are left alone when the sample does not shrink by worthIt, so
// incompressible data costs only a 4 KiB compression attempt. The result
// is compressed only if the whole compressed form passes worthIt too.
// scratch, if it has capacity, is used for the compressed output.
func compressOrSkip(plaintext, scratch []byte) (payload []byte, compressed bool) {
	n := len(plaintext)
	if n == 0 {
		return plaintext, false
	}
	c := compressors.Get().(*compressor)
	defer compressors.Put(c)
	if n > sampleSize {
		for i := range samplePieces {
			off := (n - samplePiece) * i / (samplePieces - 1)
			copy(c.sample[i*samplePiece:], plaintext[off:off+samplePiece])
		}
		if z := c.enc.EncodeAll(c.sample[:], scratch[:0]); !worthIt(sampleSize, len(z)) {
			return plaintext, false
		}
	}
	z := c.enc.EncodeAll(plaintext, scratch[:0])
	if !worthIt(n, len(z)) {
		return plaintext, false
	}
	return z, true
}

// compress is compressOrSkip's compressed form, made without asking
// whether it is worth it: for a plaintext compressOrSkip compressed
// before (AppendEnvelopeAs).
func compress(plaintext, scratch []byte) []byte {
	c := compressors.Get().(*compressor)
	defer compressors.Put(c)
	return c.enc.EncodeAll(plaintext, scratch[:0])
}

// decompress inverts compressOrSkip's compressed form. It accepts exactly
// what Seal writes: one zstd frame that declares its content size, which
// must be at most MaxSize (else ErrTooLarge) and must match the decoded
// length (else ErrDecompress). Nothing larger than MaxSize is allocated.
func decompress(z []byte) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(z); err != nil {
		return nil, fmt.Errorf("zstd frame header: %v: %w", err, ErrDecompress)
	}
	if !h.HasFCS {
		return nil, fmt.Errorf("zstd frame without content size: %w", ErrDecompress)
	}
	if h.FrameContentSize > MaxSize {
		return nil, fmt.Errorf("zstd frame declares %d bytes, over %d: %w", h.FrameContentSize, MaxSize, ErrTooLarge)
	}
	out, err := decoder().DecodeAll(z, make([]byte, 0, h.FrameContentSize))
	if err != nil {
		return nil, fmt.Errorf("zstd: %v: %w", err, ErrDecompress)
	}
	if uint64(len(out)) != h.FrameContentSize {
		return nil, fmt.Errorf("zstd output %d bytes, frame declares %d: %w", len(out), h.FrameContentSize, ErrDecompress)
	}
	return out, nil
}
