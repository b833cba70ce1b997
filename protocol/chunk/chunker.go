package chunk

import (
	"errors"
	"fmt"
	"io"
)

// Chunker cuts a stream into chunks under its Params. The boundaries are
// exactly those Params.Boundaries gives for the whole stream in memory.
//
// A Chunker is not safe for concurrent use.
type Chunker struct {
	r   io.Reader
	p   Params
	buf []byte // holds unconsumed input in buf[start:end]

	start, end int
	eof        bool // r has returned io.EOF
	err        error
}

// bufChunks is how many maximum-size chunks the read buffer holds: the
// tail carried over on each refill is at most one chunk, so with 8 the copy
// costs at most 1/7 of a memmove of the input.
const bufChunks = 8

// NewChunker returns a Chunker that reads r and cuts under p, which must come
// from NewParams or DefaultParams (else ErrBadParams). It holds one buffer
// of 8*p.Max bytes for its lifetime.
func NewChunker(r io.Reader, p Params) (*Chunker, error) {
	if !p.valid() {
		return nil, fmt.Errorf("chunker: %w", ErrBadParams)
	}
	return &Chunker{r: r, p: p, buf: make([]byte, bufChunks*p.Max)}, nil
}

// Next returns the next chunk. The slice aliases the Chunker's buffer: it is
// valid only until the next call to Next, and the caller must not modify
// it (copy it to keep it). At the end of the stream Next returns nil,
// io.EOF; an error from the reader is returned wrapped, and from then on
// every call returns it again. The stream is never empty-chunked: an empty
// input yields io.EOF at once.
func (c *Chunker) Next() ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	if c.end-c.start < c.p.Max && !c.eof {
		if err := c.fill(); err != nil {
			c.err = err
			return nil, err
		}
	}
	if c.start == c.end {
		c.err = io.EOF
		return nil, io.EOF
	}
	n := c.p.Cut(c.buf[c.start:c.end])
	chunk := c.buf[c.start : c.start+n : c.start+n]
	c.start += n
	return chunk, nil
}

// fill moves the unconsumed tail to the front of the buffer and reads until
// the buffer is full or the reader reports io.EOF.
func (c *Chunker) fill() error {
	c.end = copy(c.buf, c.buf[c.start:c.end])
	c.start = 0
	for empty := 0; c.end < len(c.buf); {
		n, err := c.r.Read(c.buf[c.end:])
		c.end += n
		if n == 0 && err == nil {
			if empty++; empty == 100 {
				return fmt.Errorf("reading chunker input: %w", io.ErrNoProgress)
			}
			continue
		}
		empty = 0
		if errors.Is(err, io.EOF) {
			c.eof = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading chunker input: %w", err)
		}
	}
	return nil
}
