package keys

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"pgregory.net/rapid"
)

// bip39Vectors are the 24-word English vectors (entropy -> mnemonic). The
// first four are from the BIP-39 spec's vectors.json (trezor/python-
// mnemonic); the rest are from go-bip39 v1.1.0's bip39_test.go.
var bip39Vectors = []struct{ entropy, phrase string }{
	{"0000000000000000000000000000000000000000000000000000000000000000",
		"abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon art"},
	{"7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
		"legal winner thank year wave sausage worth useful legal winner thank year wave sausage worth useful legal winner thank year wave sausage worth title"},
	{"8080808080808080808080808080808080808080808080808080808080808080",
		"letter advice cage absurd amount doctor acoustic avoid letter advice cage absurd amount doctor acoustic avoid letter advice cage absurd amount doctor acoustic bless"},
	{"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
		"zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo vote"},
	{"3e141609b97933b66a060dcddc71fad1d91677db872031e85f4c015c5e7e8982",
		"dignity pass list indicate nasty swamp pool script soccer toe leaf photo multiply desk host tomato cradle drill spread actor shine dismiss champion exotic"},
	{"2c85efc7f24ee4573d2b81a6ec66cee209b2dcbd09d8eddc51e0215b0b68e416",
		"clutch control vehicle tonight unusual clog visa ice plunge glimpse recipe series open hour vintage deposit universe tip job dress radar refuse motion taste"},
	{"4fa1a8bc3e6d80ee1316050e862c1812031493212b7ec3f3bb1b08f168cabeef",
		"exile ask congress lamp submit jacket era scheme attend cousin alcohol catch course end lucky hurt sentence oven short ball bird grab wing top"},
	{"15da872c95a13dd738fbf50e427583ad61f18fd99f628c417a61cf8343c90419",
		"beyond stage sleep clip because twist token leaf atom beauty genius food business side grid unable middle armed observe pair crouch tonight away coconut"},
}

func TestPhraseVectors(t *testing.T) {
	for _, v := range bip39Vectors {
		t.Run(v.entropy[:8], func(t *testing.T) {
			var r RootSecret
			if n, err := hex.Decode(r[:], []byte(v.entropy)); err != nil || n != 32 {
				t.Fatalf("bad vector: %v", err)
			}
			if got := r.Phrase(); got != v.phrase {
				t.Errorf("Phrase: got %q, want %q", got, v.phrase)
			}
			got, err := ParsePhrase(v.phrase)
			if err != nil {
				t.Fatalf("ParsePhrase: %v", err)
			}
			if got != r {
				t.Errorf("ParsePhrase: got %x, want %x", got, r)
			}
		})
	}
}

func TestPhraseRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var r RootSecret
		copy(r[:], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "secret"))
		p := r.Phrase()
		if n := len(strings.Fields(p)); n != PhraseWords {
			t.Fatalf("Phrase has %d words, want %d", n, PhraseWords)
		}
		got, err := ParsePhrase(p)
		if err != nil {
			t.Fatalf("ParsePhrase(%q): %v", p, err)
		}
		if got != r {
			t.Fatalf("got %x, want %x", got, r)
		}
		// Any word cut to 4+ letters parses to the same secret.
		words := strings.Fields(p)
		i := rapid.IntRange(0, PhraseWords-1).Draw(t, "cut")
		if len(words[i]) >= 4 {
			words[i] = words[i][:rapid.IntRange(4, len(words[i])).Draw(t, "len")]
		}
		if got, err := ParsePhrase(strings.Join(words, " ")); err != nil || got != r {
			t.Fatalf("with word %d cut to %q: got (%x, %v), want (%x, nil)", i+1, words[i], got, err, r)
		}
	})
}

func TestParsePhraseNormalises(t *testing.T) {
	v := bip39Vectors[4]
	want, err := ParsePhrase(v.phrase)
	if err != nil {
		t.Fatal(err)
	}
	fullWidth := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'ａ' // FULLWIDTH LATIN SMALL LETTER: NFKD maps it back
		}
		return r
	}, v.phrase)
	tests := []struct{ name, in string }{
		{"upper case", strings.ToUpper(v.phrase)},
		{"mixed whitespace", "  " + strings.ReplaceAll(v.phrase, " ", " \t\n ") + "\r\n"},
		{"ideographic space", strings.ReplaceAll(v.phrase, " ", "\u3000")},
		{"full-width letters", fullWidth},
		{"4-letter prefixes", strings.Join(mapWords(v.phrase, func(w string) string { return w[:min(4, len(w))] }), " ")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePhrase(tt.in)
			if err != nil {
				t.Fatalf("ParsePhrase: %v", err)
			}
			if got != want {
				t.Errorf("got %x, want %x", got, want)
			}
		})
	}
}

func mapWords(p string, f func(string) string) []string {
	w := strings.Fields(p)
	for i := range w {
		w[i] = f(w[i])
	}
	return w
}

// replaceWord returns the phrase with word i (0-based) replaced.
func replaceWord(p string, i int, w string) string {
	words := strings.Fields(p)
	words[i] = w
	return strings.Join(words, " ")
}

func TestParsePhraseErrors(t *testing.T) {
	base := bip39Vectors[4].phrase // dignity pass list indicate nasty ...
	words := strings.Fields(base)
	tests := []struct {
		name        string
		in          string
		want        error
		position    int      // for *PhraseError; 0 = not checked
		suggestions []string // prefix of the suggestions; nil = not checked
		msg         string   // substring of the message
	}{
		{"empty", "", ErrWordCount, 0, nil, "0 words, want 24"},
		{"23 words", strings.Join(words[:23], " "), ErrWordCount, 0, nil, "23 words, want 24 (is a word missing?)"},
		{"12-word BIP-39 phrase", strings.Join(words[:12], " "), ErrWordCount, 0, nil, "12 words"},
		{"25 words", base + " zoo", ErrWordCount, 0, nil, "25 words"},
		{"misspelt word", replaceWord(base, 6, "pol"), ErrUnknownWord, 7, []string{"pole", "pool"}, `word 7 "pol"`},
		{"transposed letters", replaceWord(base, 0, "dingity"), ErrUnknownWord, 1, []string{"dignity"}, `did you mean "dignity"`},
		{"right prefix, wrong tail", replaceWord(base, 3, "indicxte"), ErrUnknownWord, 4, []string{"indicate"}, `"indicxte"`},
		{"too long", replaceWord(base, 3, "indicates"), ErrUnknownWord, 4, []string{"indicate"}, ""},
		{"3-letter cut", replaceWord(base, 0, "dig"), ErrUnknownWord, 1, nil, ""},
		{"nothing close", replaceWord(base, 9, "qqqqqqqqqqqq"), ErrUnknownWord, 10, []string{}, "is not in the BIP-39 English word list"},
		{"not a letter", replaceWord(base, 9, "🙂"), ErrUnknownWord, 10, nil, ""},
		{"two words swapped", replaceWord(replaceWord(base, 0, words[1]), 1, words[0]), ErrChecksum, 0, nil, "mistyped somewhere"},
		{"wrong last word", replaceWord(base, 23, "zoo"), ErrChecksum, 0, nil, "checksum does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePhrase(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("message %q does not contain %q", err, tt.msg)
			}
			var pe *PhraseError
			if tt.want == ErrWordCount {
				if errors.As(err, &pe) {
					t.Errorf("got a *PhraseError for a word count error")
				}
				return
			}
			if !errors.As(err, &pe) {
				t.Fatalf("got %T, want a *PhraseError inside", err)
			}
			if tt.position != 0 && pe.Position != tt.position {
				t.Errorf("position: got %d, want %d", pe.Position, tt.position)
			}
			if tt.suggestions != nil {
				if len(tt.suggestions) == 0 && len(pe.Suggestions) != 0 {
					t.Errorf("suggestions: got %q, want none", pe.Suggestions)
				}
				for _, s := range tt.suggestions {
					if !slices.Contains(pe.Suggestions, s) {
						t.Errorf("suggestions: got %q, want it to contain %q", pe.Suggestions, s)
					}
				}
				if len(tt.suggestions) > 0 && pe.Suggestions[0] != tt.suggestions[0] {
					t.Errorf("first suggestion: got %q, want %q", pe.Suggestions[0], tt.suggestions[0])
				}
			}
		})
	}
}

func TestParsePhraseReportsEveryUnknownWord(t *testing.T) {
	in := replaceWord(replaceWord(bip39Vectors[4].phrase, 2, "lisst"), 17, "drilll")
	_, err := ParsePhrase(in)
	var got []int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var pe *PhraseError
		if errors.As(e, &pe) {
			got = append(got, pe.Position)
		}
	}
	if !slices.Equal(got, []int{3, 18}) {
		t.Errorf("positions: got %v, want [3 18] (error %v)", got, err)
	}
}

// TestChecksumHint: a one-letter slip into another list word ("pool" for
// "poll") fails the checksum, and the hint names the position and the fix.
func TestChecksumHint(t *testing.T) {
	var r RootSecret
	for i := range r {
		r[i] = byte(i * 7)
	}
	words := strings.Fields(r.Phrase())
	// Find a position whose word has exactly one hint candidate that fixes
	// the checksum, deterministically.
	for p, w := range words {
		for _, c := range wordList {
			if c == w || editDistance(w, c, hintDistance) > hintDistance {
				continue
			}
			_, err := ParsePhrase(replaceWord(r.Phrase(), p, c))
			var pe *PhraseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrChecksum) {
				continue // the slip happens to pass the checksum, or is reported otherwise
			}
			if pe.Position == 0 {
				continue // ambiguous: no hint, which is allowed
			}
			if pe.Position != p+1 || pe.Word != c || !slices.Equal(pe.Suggestions, []string{w}) {
				t.Fatalf("typo %q for %q at word %d: got hint (%d, %q -> %q), want (%d, %q -> %q)",
					c, w, p+1, pe.Position, pe.Word, pe.Suggestions, p+1, c, w)
			}
			if msg := err.Error(); !strings.Contains(msg, `perhaps word`) {
				t.Errorf("message %q does not give the hint", msg)
			}
			return
		}
	}
	t.Fatal("no single-letter slip produced a hint")
}

// TestChecksumHintRate measures the hint on seeded random slips: a
// one-letter slip into another list word must be named correctly most of
// the time and never wrongly; an arbitrary wrong word must rarely draw a
// wrong hint. The numbers are quoted in hintDistance's comment.
func TestChecksumHintRate(t *testing.T) {
	trials := 60
	if testing.Short() {
		trials = 15
	}
	for _, slip := range []struct {
		name          string
		near          bool
		minRight      float64
		maxWrongShare float64
	}{{"one-letter slip", true, 0.8, 0}, {"any other word", false, 0, 0.2}} {
		rng := rand.New(rand.NewPCG(7, 11))
		var right, wrong, total int
		for total < trials {
			var r RootSecret
			for i := range r {
				r[i] = byte(rng.Uint32())
			}
			idx := phraseIndexes(r)
			p := rng.IntN(PhraseWords)
			var cands []uint16
			for c, w := range wordList {
				if uint16(c) != idx[p] && (!slip.near || editDistance(wordList[idx[p]], w, 1) == 1) {
					cands = append(cands, uint16(c))
				}
			}
			if len(cands) == 0 {
				continue
			}
			orig := idx[p]
			idx[p] = cands[rng.IntN(len(cands))]
			if _, ok := secretFromIndexes(idx); ok {
				continue // undetectable by any checksum
			}
			total++
			if pos, fix, found := checksumFix(idx); found {
				if pos == p && fix == orig {
					right++
				} else {
					wrong++
				}
			}
		}
		t.Logf("%s: %d/%d hinted right, %d wrong", slip.name, right, total, wrong)
		if float64(right) < slip.minRight*float64(total) {
			t.Errorf("%s: got %d/%d right hints, want >= %.0f%%", slip.name, right, total, 100*slip.minRight)
		}
		if float64(wrong) > slip.maxWrongShare*float64(total) {
			t.Errorf("%s: got %d/%d wrong hints, want <= %.0f%%", slip.name, wrong, total, 100*slip.maxWrongShare)
		}
	}
}

func TestGenerateRootSecret(t *testing.T) {
	src := bytes.Repeat([]byte{0x42}, 40)
	r, err := GenerateRootSecret(bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if want := RootSecret(bytes.Repeat([]byte{0x42}, 32)); r != want {
		t.Errorf("got %x, want %x", r, want)
	}
	if _, err := GenerateRootSecret(bytes.NewReader(src[:31])); err == nil {
		t.Error("short randomness: got nil error, want one")
	}
	boom := errors.New("entropy unavailable")
	if _, err := GenerateRootSecret(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Errorf("got %v, want %v", err, boom)
	}
}

func TestWordList(t *testing.T) {
	if len(wordList) != 2048 {
		t.Fatalf("got %d words, want 2048", len(wordList))
	}
	if wordList[0] != "abandon" || wordList[2047] != "zoo" {
		t.Errorf("got first/last %q/%q, want abandon/zoo", wordList[0], wordList[2047])
	}
	for i, w := range wordList {
		if x, ok := lookupWord(w); !ok || int(x) != i {
			t.Errorf("lookupWord(%q): got (%d, %v), want (%d, true)", w, x, ok, i)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"pool", "pool", 0},
		{"pool", "poll", 1},
		{"dingity", "dignity", 1},
		{"abandon", "abandn", 1},
		{"", "zoo", 3},
		{"abc", "abcdefgh", 3}, // capped: max+1
		{"ünïcode", "unicode", 2},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b, 2); got != min(tt.want, 3) {
			t.Errorf("editDistance(%q, %q): got %d, want %d", tt.a, tt.b, got, min(tt.want, 3))
		}
	}
}

// TestParsePhraseLongWord: a pasted blob in place of a word is reported
// promptly, without suggestions.
func TestParsePhraseLongWord(t *testing.T) {
	blob := strings.Repeat("abandon", 100000)
	_, err := ParsePhrase(replaceWord(bip39Vectors[4].phrase, 5, blob))
	var pe *PhraseError
	if !errors.As(err, &pe) || pe.Position != 6 || len(pe.Suggestions) != 1 || pe.Suggestions[0] != "abandon" {
		t.Fatalf("got %v, want an unknown word 6 with the single 4-letter-prefix suggestion \"abandon\"", err)
	}
}
