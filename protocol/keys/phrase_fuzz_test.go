package keys

import (
	"errors"
	"testing"
)

// FuzzParsePhrase: ParsePhrase never panics, fails only with its documented
// errors, and whatever parses round-trips through Phrase.
func FuzzParsePhrase(f *testing.F) {
	for _, v := range bip39Vectors {
		f.Add(v.phrase)
	}
	f.Add("")
	f.Add("ABANDON  aban\tabandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon art")
	f.Add("zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo")
	f.Add("ｚｏｏ zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo xyzzy")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParsePhrase(s)
		if err != nil {
			if !errors.Is(err, ErrWordCount) && !errors.Is(err, ErrUnknownWord) && !errors.Is(err, ErrChecksum) {
				t.Fatalf("undocumented error: %v", err)
			}
			_ = err.Error()
			return
		}
		got, err := ParsePhrase(r.Phrase())
		if err != nil || got != r {
			t.Fatalf("round trip of %q: got (%x, %v), want (%x, nil)", s, got, err, r)
		}
	})
}
