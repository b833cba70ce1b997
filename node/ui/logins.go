package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sync"
	"time"
)

// Lifetimes of a login code and of a session.
const (
	CodeTTL    = 2 * time.Minute
	SessionTTL = 24 * time.Hour
)

// Logins issues one-time login codes and keeps the sessions they start.
// Safe for concurrent use; everything lives in memory, so a restarted
// agent needs a new `weft ui`.
type Logins struct {
	now func() time.Time
	key [32]byte // derives each session's form token

	mu       sync.Mutex
	codes    map[string]time.Time // code -> expiry
	sessions map[string]time.Time // session ID -> expiry
}

// NewLogins returns an empty set of logins on clock now (nil: time.Now).
func NewLogins(now func() time.Time) *Logins {
	if now == nil {
		now = time.Now
	}
	l := &Logins{now: now, codes: map[string]time.Time{}, sessions: map[string]time.Time{}}
	if _, err := rand.Read(l.key[:]); err != nil {
		panic("ui: no randomness: " + err.Error()) // crypto/rand does not fail on supported platforms
	}
	return l
}

func random() string {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("ui: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// NewCode issues a login code, good once within CodeTTL.
func (l *Logins) NewCode() string {
	c := random()
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for k, exp := range l.codes { // codes nobody used
		if now.After(exp) {
			delete(l.codes, k)
		}
	}
	l.codes[c] = now.Add(CodeTTL)
	return c
}

// Login takes code and, if it is good, starts a session and returns its
// ID; ok is false for a code unknown, used or expired.
func (l *Logins) Login(code string) (session string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var found string
	for k := range l.codes {
		if subtle.ConstantTimeCompare([]byte(k), []byte(code)) == 1 {
			found = k
		}
	}
	exp, had := l.codes[found]
	if found == "" || !had {
		return "", false
	}
	delete(l.codes, found)
	if now.After(exp) {
		return "", false
	}
	for k, e := range l.sessions {
		if now.After(e) {
			delete(l.sessions, k)
		}
	}
	s := random()
	l.sessions[s] = now.Add(SessionTTL)
	return s, true
}

// Valid reports whether session is a live session.
func (l *Logins) Valid(session string) bool {
	if session == "" {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	exp, ok := l.sessions[session]
	return ok && !l.now().After(exp)
}

// FormToken is the token the forms of session carry.
func (l *Logins) FormToken(session string) string {
	m := hmac.New(sha256.New, l.key[:])
	m.Write([]byte(session))
	return hex.EncodeToString(m.Sum(nil))
}

// CheckFormToken reports whether tok is session's form token.
func (l *Logins) CheckFormToken(session, tok string) bool {
	return hmac.Equal([]byte(l.FormToken(session)), []byte(tok))
}
