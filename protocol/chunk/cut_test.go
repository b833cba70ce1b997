package chunk

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/iotest"
)

// small are bounds for tests that want many chunks from little data.
var small = mustParams(256, 1024, 4096)

func mustParams(min, avg, max int) Params {
	p, err := NewParams(min, avg, max)
	if err != nil {
		panic(err)
	}
	return p
}

func TestNewParams(t *testing.T) {
	tests := []struct {
		name          string
		min, avg, max int
		wantErr       bool
	}{
		{"defaults", MinSize, AvgSize, MaxSize, false},
		{"small", 64, 66, 67, false},
		{"min below window", 63, 1024, 4096, true},
		{"avg too close to min", 1024, 1025, 4096, true},
		{"max equal avg", 256, 1024, 1024, true},
		{"max over MaxSize", MinSize, AvgSize, MaxSize + 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewParams(tt.min, tt.avg, tt.max)
			if got := errors.Is(err, ErrBadParams); got != tt.wantErr {
				t.Errorf("got error %v, want ErrBadParams: %v", err, tt.wantErr)
			}
		})
	}
}

func TestCutBounds(t *testing.T) {
	p := small
	data := seeded(7, 1<<20)
	tests := []struct {
		name string
		data []byte
		want func(n int) bool
	}{
		{"empty", nil, func(n int) bool { return n == 0 }},
		{"below min", data[:p.Min-1], func(n int) bool { return n == p.Min-1 }},
		{"exactly min", data[:p.Min], func(n int) bool { return n == p.Min }},
		{"zeros cut at max", make([]byte, 3*p.Max), func(n int) bool { return n == p.Max }},
		{"random within bounds", data, func(n int) bool { return n >= p.Min && n <= p.Max }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := p.Cut(tt.data); !tt.want(n) {
				t.Errorf("got cut %d of %d bytes", n, len(tt.data))
			}
		})
	}
}

// TestCutWindow checks the contract that makes resynchronisation work: a
// content cut at n depends only on data[n-64:n], not on the chunk start.
func TestCutWindow(t *testing.T) {
	p := small
	data := seeded(8, 1<<20)
	b := p.Boundaries(data)
	for i := 1; i < len(b)-1; i++ {
		start, end := b[i-1], b[i]
		if end-start == p.Max {
			continue // forced cut, not a content cut
		}
		// Prefix the chunk with different bytes: the cut must stay put as
		// long as it stays at least Min after the new start.
		shifted := append(seeded(uint64(i), p.Min), data[end-p.Min+1:min(len(data), end+p.Max)]...)
		if got := p.Cut(shifted); got > p.Min+p.Min-1 {
			t.Fatalf("chunk %d: got cut %d, want <= %d", i, got, 2*p.Min-1)
		}
	}
}

func TestBoundaries(t *testing.T) {
	for _, p := range []Params{small, DefaultParams()} {
		data := seeded(9, 8<<20)
		b := p.Boundaries(data)
		if len(b) == 0 || b[len(b)-1] != len(data) {
			t.Fatalf("got last boundary %v, want %d", b[len(b)-1:], len(data))
		}
		prev := 0
		for i, e := range b {
			n := e - prev
			if n > p.Max || (n < p.Min && i != len(b)-1) {
				t.Fatalf("chunk %d: got size %d, want in [%d, %d]", i, n, p.Min, p.Max)
			}
			prev = e
		}
		mean := float64(len(data)) / float64(len(b))
		if mean < 0.85*float64(p.Avg) || mean > 1.1*float64(p.Avg) {
			t.Errorf("params %d/%d/%d: got mean chunk %.0f, want about %d", p.Min, p.Avg, p.Max, mean, p.Avg)
		}
	}
	if got := Boundaries(nil); len(got) != 0 {
		t.Errorf("got %v for empty input, want none", got)
	}
}

// collect runs a Chunker over r and returns its boundaries.
func collect(t *testing.T, r io.Reader, p Params) ([]int, error) {
	t.Helper()
	c, err := NewChunker(r, p)
	if err != nil {
		t.Fatal(err)
	}
	var b []int
	off := 0
	for {
		chunk, err := c.Next()
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		off += len(chunk)
		b = append(b, off)
	}
}

func TestChunkerMatchesBoundaries(t *testing.T) {
	data := seeded(10, 3<<20+12345)
	tests := []struct {
		name string
		r    func() io.Reader
	}{
		{"whole reads", func() io.Reader { return bytes.NewReader(data) }},
		{"one-byte reads", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data[:200000])) }},
		{"half reads", func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) }},
		{"data with EOF", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) }},
	}
	for _, tt := range tests {
		for _, p := range []Params{small, DefaultParams()} {
			t.Run(tt.name, func(t *testing.T) {
				r := tt.r()
				in, _ := io.ReadAll(tt.r())
				got, err := collect(t, r, p)
				if err != nil {
					t.Fatal(err)
				}
				if want := p.Boundaries(in); !slices.Equal(got, want) {
					t.Errorf("got %d boundaries, want %d (first diff at %d)", len(got), len(want), firstDiff(got, want))
				}
			})
		}
	}
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestChunkerErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		r    io.Reader
		want error
	}{
		{"reader error", iotest.ErrReader(boom), boom},
		{"no progress", zeroReader{}, io.ErrNoProgress},
		{"empty input", bytes.NewReader(nil), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := collect(t, tt.r, small)
			if !errors.Is(err, tt.want) || len(b) != 0 {
				t.Errorf("got %d chunks, error %v; want none, %v", len(b), err, tt.want)
			}
		})
	}
	if _, err := NewChunker(bytes.NewReader(nil), Params{}); !errors.Is(err, ErrBadParams) {
		t.Errorf("got %v for zero Params, want ErrBadParams", err)
	}
}

// zeroReader returns 0, nil forever.
type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

// cutReference is the cut rule of docs/protocol/chunks.md written as
// plainly as possible: the hash of each candidate's 64-byte window.
func cutReference(p Params, data []byte) int {
	if len(data) <= p.Min {
		return len(data)
	}
	end := min(len(data), p.Max)
	for n := p.Min; n <= end; n++ {
		var h uint64
		for _, b := range data[n-window : n] {
			h = h<<1 + gear[b]
		}
		if h < p.thr {
			return n
		}
	}
	return end
}

func TestCutMatchesReference(t *testing.T) {
	// Loose bounds make candidates common, so every parity of cut
	// position, the last position and the Max cap all occur.
	p := mustParams(64, 80, 200)
	data := seeded(11, 1<<16)
	for off := 0; off < 4000; off += 7 {
		for _, n := range []int{0, 63, 64, 65, 66, 199, 200, 201, 250} {
			if off+n > len(data) {
				continue
			}
			in := data[off : off+n]
			if got, want := p.Cut(in), cutReference(p, in); got != want {
				t.Fatalf("offset %d, length %d: got cut %d, want %d", off, n, got, want)
			}
		}
	}
	d := DefaultParams()
	for off := 0; off+MaxSize <= len(data)*4; off += 50000 {
		in := seeded(uint64(off), MaxSize+10)
		if got, want := d.Cut(in), cutReference(d, in); got != want {
			t.Fatalf("default params, seed %d: got cut %d, want %d", off, got, want)
		}
	}
}
