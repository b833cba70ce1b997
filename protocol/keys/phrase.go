package keys

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tyler-smith/go-bip39/wordlists"
	"golang.org/x/text/unicode/norm"
)

// The recovery phrase is BIP-39 with the English word list, fixed at 24
// words: the 256-bit root secret followed by the first 8 bits of its SHA-256
// make 264 bits, read as 24 big-endian 11-bit indexes into the list. It is
// the standard BIP-39 mnemonic of the secret as entropy (we never run the
// BIP-39 seed derivation: the secret itself is the key), so any BIP-39 tool
// can check a phrase's checksum, and steel backup plates made for it work.
//
// Parsing accepts, per BIP-39, any case and any whitespace between words,
// and applies NFKD. It also accepts any word cut short to 4 or more letters
// (“aban” or “abando” for “abandon”): the English list is built so that the
// first 4 letters name one word, backup plates often hold only those 4, and
// a 4-letter prefix cannot be mistaken for another word. Shorter cuts are not
// accepted (“aba” could be a typo of anything); a word that is longer than a
// list word, or that goes wrong after its fourth letter, is an unknown word.

// PhraseWords is the number of words in a recovery phrase.
const PhraseWords = 24

// Errors from ParsePhrase. Classify with errors.Is; the error values carry
// the details, and for a word-level problem errors.As finds a *PhraseError.
var (
	// ErrWordCount means the phrase does not have PhraseWords words.
	ErrWordCount = errors.New("wrong number of words in recovery phrase")
	// ErrUnknownWord means a word is not in the word list and is not a
	// unique 4-letter-or-longer prefix of one.
	ErrUnknownWord = errors.New("word not in the recovery word list")
	// ErrChecksum means every word is a list word but the phrase's checksum
	// does not match: some word is mistyped as another list word, or words
	// are out of order.
	ErrChecksum = errors.New("recovery phrase checksum does not match")
)

// PhraseError describes a problem with one word of a recovery phrase. Its
// message quotes words of the phrase (clipped to 32 characters), which are
// part of the secret: show it to the person typing, never log it.
type PhraseError struct {
	// Position is the word's 1-based position in the phrase. For
	// ErrChecksum it is the position of the suggested fix, or 0 when no
	// single word could be singled out.
	Position int
	// Word is the word as read, after normalisation.
	Word string
	// Suggestions are list words the user may have meant, best first; for
	// ErrChecksum, the one replacement that makes the checksum match.
	Suggestions []string
	// Err is ErrUnknownWord or ErrChecksum.
	Err error
}

func (e *PhraseError) Error() string {
	var b strings.Builder
	switch {
	case errors.Is(e.Err, ErrChecksum):
		b.WriteString("recovery phrase checksum does not match: a word is mistyped somewhere, or two words are swapped")
		if e.Position > 0 && len(e.Suggestions) == 1 {
			fmt.Fprintf(&b, "; perhaps word %d %.32q should be %q", e.Position, e.Word, e.Suggestions[0])
		}
		return b.String()
	case errors.Is(e.Err, ErrUnknownWord):
		fmt.Fprintf(&b, "recovery phrase word %d %.32q is not in the BIP-39 English word list", e.Position, e.Word)
	default:
		fmt.Fprintf(&b, "recovery phrase word %d %.32q: %v", e.Position, e.Word, e.Err)
	}
	if len(e.Suggestions) > 0 {
		b.WriteString("; did you mean ")
		for i, s := range e.Suggestions {
			switch {
			case i == 0:
			case i == len(e.Suggestions)-1:
				b.WriteString(" or ")
			default:
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", s)
		}
		b.WriteString("?")
	}
	return b.String()
}

func (e *PhraseError) Unwrap() error { return e.Err }

// The English list, indexed. Built once at init from go-bip39's copy, which
// itself checks the list's CRC against the BIP-39 repository's at init.
var (
	wordList   = wordlists.English
	wordIndex  = make(map[string]uint16, 2048)
	prefixWord = make(map[string]uint16, 2048) // first 4 letters -> index, for words of 4+ letters
	maxWordLen int                             // longest list word, in letters (8)
)

func init() {
	if len(wordList) != 2048 {
		panic(fmt.Sprintf("keys: invariant: BIP-39 English list has %d words, want 2048", len(wordList)))
	}
	for i, w := range wordList {
		wordIndex[w] = uint16(i)
		maxWordLen = max(maxWordLen, len(w))
		if len(w) >= 4 {
			if _, dup := prefixWord[w[:4]]; dup {
				panic("keys: invariant: BIP-39 English 4-letter prefixes are not unique: " + w)
			}
			prefixWord[w[:4]] = uint16(i)
		}
	}
}

// Words returns n words of the BIP-39 English list, the i-th named by bits
// 11i to 11i+10 of b (big-endian). It panics when b has fewer than 11n
// bits. Short authentication strings use it: words a person compares
// between two screens.
func Words(b []byte, n int) []string {
	if len(b)*8 < 11*n {
		panic(fmt.Sprintf("keys: Words: %d bytes cannot give %d words", len(b), n))
	}
	out := make([]string, n)
	for i := range n {
		var idx uint16
		for j := range 11 {
			bit := 11*i + j
			idx = idx<<1 | uint16(b[bit/8]>>(7-bit%8)&1)
		}
		out[i] = wordList[idx]
	}
	return out
}

// GenerateRootSecret draws a new root secret from rand (crypto/rand.Reader
// in production, a seeded source in tests).
func GenerateRootSecret(rand io.Reader) (RootSecret, error) {
	var r RootSecret
	if _, err := io.ReadFull(rand, r[:]); err != nil {
		return RootSecret{}, fmt.Errorf("generating root secret: %w", err)
	}
	return r, nil
}

// Phrase returns the secret's 24-word recovery phrase: lower-case list
// words separated by single spaces. The caller must keep it secret.
func (r RootSecret) Phrase() string {
	idx := phraseIndexes(r)
	words := make([]string, PhraseWords)
	for i, x := range idx {
		words[i] = wordList[x]
	}
	return strings.Join(words, " ")
}

// ParsePhrase returns the root secret a recovery phrase encodes. Errors, in
// the order they are checked:
//   - ErrWordCount (wrapped) if there are not 24 words;
//   - ErrUnknownWord as one *PhraseError per unknown word, joined with
//     errors.Join, each with its position and up to three suggestions;
//   - ErrChecksum as a *PhraseError if the checksum does not match, naming
//     a word and its fix when exactly one single-word change among near
//     misspellings makes the checksum match.
func ParsePhrase(s string) (RootSecret, error) {
	words := strings.Fields(strings.ToLower(norm.NFKD.String(s)))
	if len(words) != PhraseWords {
		hint := ""
		switch len(words) {
		case PhraseWords - 1, PhraseWords - 2:
			hint = " (is a word missing?)"
		case PhraseWords + 1:
			hint = " (is a word repeated?)"
		}
		return RootSecret{}, fmt.Errorf("recovery phrase has %d words, want %d%s: %w", len(words), PhraseWords, hint, ErrWordCount)
	}
	var idx [PhraseWords]uint16
	var errs []error
	for i, w := range words {
		x, ok := lookupWord(w)
		if !ok {
			errs = append(errs, &PhraseError{Position: i + 1, Word: w, Suggestions: suggest(w, 3), Err: ErrUnknownWord})
			continue
		}
		idx[i] = x
	}
	if len(errs) > 0 {
		return RootSecret{}, errors.Join(errs...)
	}
	r, ok := secretFromIndexes(idx)
	if !ok {
		pe := &PhraseError{Err: ErrChecksum}
		if pos, fix, found := checksumFix(idx); found {
			pe.Position, pe.Word, pe.Suggestions = pos+1, words[pos], []string{wordList[fix]}
		}
		return RootSecret{}, pe
	}
	return r, nil
}

// IsWord reports whether w is exactly one word of the list (lower case, in
// full): what a join's words (member.Invite.Words) are made of.
func IsWord(w string) bool {
	_, ok := wordIndex[w]
	return ok
}

// lookupWord finds a normalised word in the list, accepting a unique prefix
// of 4 or more letters.
func lookupWord(w string) (uint16, bool) {
	if x, ok := wordIndex[w]; ok {
		return x, true
	}
	if len(w) < 4 {
		return 0, false
	}
	x, ok := prefixWord[w[:4]]
	if !ok || !strings.HasPrefix(wordList[x], w) {
		return 0, false
	}
	return x, true
}

// phraseIndexes splits secret || SHA-256(secret)[0] into 24 11-bit indexes.
func phraseIndexes(r RootSecret) [PhraseWords]uint16 {
	sum := sha256.Sum256(r[:])
	var idx [PhraseWords]uint16
	var acc uint32
	nbits, n := 0, 0
	for _, b := range append(r[:], sum[0]) {
		acc = acc<<8 | uint32(b)
		nbits += 8
		if nbits >= 11 {
			nbits -= 11
			idx[n] = uint16(acc >> nbits & 0x7ff)
			n++
			acc &= 1<<nbits - 1
		}
	}
	return idx
}

// secretFromIndexes joins 24 11-bit indexes back into the secret and
// reports whether the checksum byte matches.
func secretFromIndexes(idx [PhraseWords]uint16) (RootSecret, bool) {
	var out [33]byte
	var acc uint32
	nbits, n := 0, 0
	for _, x := range idx {
		acc = acc<<11 | uint32(x&0x7ff)
		nbits += 11
		for nbits >= 8 {
			nbits -= 8
			out[n] = byte(acc >> nbits)
			n++
			acc &= 1<<nbits - 1
		}
	}
	var r RootSecret
	copy(r[:], out[:32])
	sum := sha256.Sum256(r[:])
	return r, sum[0] == out[32]
}

// maxSuggestDistance bounds the edit distance of suggestions for an unknown
// word: two edits cover a dropped, doubled, swapped or wrong letter, twice.
const maxSuggestDistance = 2

// hintDistance bounds the edit distance of the checksum hint's candidates.
// The checksum has only 8 bits, so each candidate change passes by chance
// with probability 1/256, and the hint is given only when exactly one does.
// At 1 edit, a slip of one letter into another list word is singled out
// about 9 times in 10; when the mistake is something else (a word two edits
// off, a wrong or swapped word) the hint names a wrong word about 8% of the
// time, which is why the message says "perhaps". At 2 edits (~13 neighbours
// per word) chance passes crowd out the true fix and the hint is mostly
// silent. Measured by TestChecksumHintRate.
const hintDistance = 1

// suggest returns up to n list words close to w, best first: the word whose
// first 4 letters w shares, if any, then the nearest by edit distance
// (ties alphabetical, which is list order).
func suggest(w string, n int) []string {
	var cands []cand
	byPrefix := -1
	if len(w) >= 4 {
		if x, ok := prefixWord[w[:4]]; ok {
			byPrefix = int(x)
			cands = append(cands, cand{wordList[x], -1})
		}
	}
	// List words have at most 8 letters: a much longer word has no near
	// neighbours, and skipping it keeps a pasted blob from costing 2048
	// distance computations over its whole length.
	if utf8.RuneCountInString(w) > maxWordLen+maxSuggestDistance {
		return suggestions(cands, n)
	}
	for i, lw := range wordList {
		if i == byPrefix {
			continue
		}
		if d := editDistance(w, lw, maxSuggestDistance); d <= maxSuggestDistance {
			cands = append(cands, cand{lw, d})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return a.dist - b.dist })
	return suggestions(cands, n)
}

// cand is a suggested word and its edit distance (-1: shares the first 4
// letters, ranked first).
type cand struct {
	word string
	dist int
}

// suggestions returns the words of the first n candidates.
func suggestions(cands []cand, n int) []string {
	var out []string
	for _, c := range cands[:min(n, len(cands))] {
		out = append(out, c.word)
	}
	return out
}

// checksumFix looks for the one word change that makes the checksum match:
// at any position, a list word within hintDistance edits of the word given. It reports it only if it is the only such change, since with an
// 8-bit checksum about one random change in 256 passes by chance.
func checksumFix(idx [PhraseWords]uint16) (pos int, fix uint16, found bool) {
	count := 0
	for p := range idx {
		orig := idx[p]
		for c, lw := range wordList {
			if uint16(c) == orig || editDistance(wordList[orig], lw, hintDistance) > hintDistance {
				continue
			}
			idx[p] = uint16(c)
			if _, ok := secretFromIndexes(idx); ok {
				count++
				pos, fix = p, uint16(c)
			}
		}
		idx[p] = orig
	}
	return pos, fix, count == 1
}

// editDistance is the optimal-string-alignment distance between a and b
// (insertions, deletions, substitutions and swaps of adjacent letters), in
// runes. It returns max+1 early when the lengths alone rule out max or less.
func editDistance(a, b string, max int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > max || -d > max {
		return max + 1
	}
	// Three rows of the classic dynamic program; list words are at most 8
	// letters, so the rows normally live on the stack.
	var rows [3][16]int
	prev2, prev, cur := rows[0][:], rows[1][:], rows[2][:]
	if len(rb)+1 > len(prev) {
		prev2, prev, cur = make([]int, len(rb)+1), make([]int, len(rb)+1), make([]int, len(rb)+1)
	}
	for j := 0; j <= len(rb); j++ {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
