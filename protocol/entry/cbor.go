package entry

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/fxamacker/cbor/v2"
)

// encMode is RFC 8949 core deterministic encoding, with nil slices written
// as empty arrays/strings so that nil and empty have one form.
var encMode = func() cbor.UserBufferEncMode {
	opts := cbor.CoreDetEncOptions()
	opts.NilContainers = cbor.NilContainerAsEmpty
	m, err := opts.UserBufferEncMode()
	if err != nil {
		panic("entry: invariant: cbor enc mode: " + err.Error())
	}
	return m
}()

// decMode bounds what hostile input can make the decoder allocate: no array
// longer than MaxRefs (the longest list a valid entry holds), no maps, no
// tags, no indefinite lengths, nesting no deeper than a valid entry's.
var decMode = func() cbor.DecMode {
	m, err := cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		MaxNestedLevels:  maxNesting,
		MaxArrayElements: MaxRefs,
		MaxMapPairs:      16, // the minimum the library allows; we use none
		IndefLength:      cbor.IndefLengthForbidden,
		TagsMd:           cbor.TagsForbidden,
		UTF8:             cbor.UTF8RejectInvalid,
	}.DecMode()
	if err != nil {
		panic("entry: invariant: cbor dec mode: " + err.Error())
	}
	return m
}()

// unmarshal decodes data into v and classifies the error: a decoder limit
// is ErrFieldTooLarge, anything else ErrMalformed.
func unmarshal(data []byte, v any) error {
	err := decMode.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	var (
		arr  *cbor.MaxArrayElementsError
		nest *cbor.MaxNestedLevelError
		mp   *cbor.MaxMapPairsError
	)
	if errors.As(err, &arr) || errors.As(err, &nest) || errors.As(err, &mp) {
		return fmt.Errorf("%w: %v", ErrFieldTooLarge, err)
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}

// bufPool holds scratch buffers for canonical checks and signature inputs,
// which are as large as an entry and needed only briefly.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooled is the largest buffer returned to bufPool, so that one huge
// entry does not pin its size in memory.
const maxPooled = 1 << 20

func getBuf() *bytes.Buffer {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	return buf
}

func putBuf(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooled {
		bufPool.Put(buf)
	}
}

// isCanonical reports whether data is exactly the canonical encoding of v.
func isCanonical(v any, data []byte) bool {
	buf := getBuf()
	defer putBuf(buf)
	if err := encMode.MarshalToBuffer(v, buf); err != nil {
		panic("entry: invariant: cbor encoding of a wire struct: " + err.Error())
	}
	return bytes.Equal(buf.Bytes(), data)
}

// marshal encodes v canonically. Encoding our own wire structs cannot fail.
func marshal(v any) []byte {
	b, err := encMode.Marshal(v)
	if err != nil {
		panic("entry: invariant: cbor encoding of a wire struct: " + err.Error())
	}
	return b
}
