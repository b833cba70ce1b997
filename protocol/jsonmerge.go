package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// JSON merge (mergedriver.go): the three versions are parsed, objects are
// merged key by key (keyedMerge), recursively where both sides changed
// different keys of one nested object, and the result is written in the
// base's layout (or the sides', when both changed it alike): compact, or
// indented with its indent (the layout of JSON.stringify(v, null, 2),
// which Obsidian's settings files use).
// Scalars and arrays are single values: changed by both sides
// differently, they conflict. In a JSON Canvas file (canvas), an array
// whose elements are all objects with distinct string "id"s (its nodes and
// edges) is merged element by element too.

// errNotJSON means a version is not one JSON value.
var errNotJSON = errors.New("not a JSON document")

// mergeJSON merges a and b from base as JSON. ok is false on a conflict;
// err is errNotJSON when any of the three does not parse, and the caller
// falls back to lines.
func mergeJSON(base, a, b []byte, canvas bool) (merged []byte, ok bool, err error) {
	for _, v := range [][]byte{base, a, b} {
		if !json.Valid(v) || jsonDepth(v) > maxJSONDepth {
			return nil, false, errNotJSON
		}
	}
	m := jsonMerger{canvas: canvas}
	out, ok := m.value(base, a, b)
	if !ok {
		return nil, false, nil
	}
	like := base
	if layoutOf(a) == layoutOf(b) {
		like = a // both sides re-laid the file out alike: keep theirs
	}
	return layoutLike(like, out), true, nil
}

// layoutOf describes how v is laid out: its indent ("" for one line) and
// what follows its last value.
func layoutOf(v []byte) string {
	body := bytes.TrimRight(v, " \t\r\n")
	indent := ""
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		rest := body[i+1:]
		indent = "\n" + string(rest[:len(rest)-len(bytes.TrimLeft(rest, " \t"))])
	}
	return indent + "|" + string(v[len(body):])
}

// maxJSONDepth bounds the nesting a JSON merge descends into: each level
// re-reads what is below it, so a document nested thousands deep (a
// member's file, not trusted) would cost time quadratic in its size.
// Deeper documents merge by lines.
const maxJSONDepth = 32

// jsonDepth is how deep v's arrays and objects nest.
func jsonDepth(v []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range v {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

type jsonMerger struct{ canvas bool }

// value merges one JSON value (each valid JSON) and returns it compact.
func (m jsonMerger) value(base, x, y []byte) ([]byte, bool) {
	bx, xx, yx := compact(base), compact(x), compact(y)
	switch {
	case bytes.Equal(xx, yx), bytes.Equal(yx, bx):
		return xx, true
	case bytes.Equal(xx, bx):
		return yx, true
	}
	if out, ok, tried := m.keyed(bx, xx, yx, objectMembers, writeObject); tried {
		return out, ok
	}
	if m.canvas {
		if out, ok, tried := m.keyed(bx, xx, yx, idElements, writeArray); tried {
			return out, ok
		}
	}
	return nil, false
}

// keyed merges three values that split into members (objects, or a
// canvas's arrays of elements with ids) member by member; tried is false
// when one of them does not split.
func (m jsonMerger) keyed(b, x, y []byte, split func([]byte) ([]member, bool), write func([]member) []byte) (out []byte, ok, tried bool) {
	bm, okb := split(b)
	xm, okx := split(x)
	ym, oky := split(y)
	if !okb || !okx || !oky {
		return nil, false, false
	}
	merged, ok := keyedMerge(bm, xm, ym, sameJSON, m.value)
	if !ok {
		return nil, false, true
	}
	return write(merged), true, true
}

func sameJSON(a, b []byte) bool { return bytes.Equal(compact(a), compact(b)) }

// compact is v (valid JSON) without insignificant space.
func compact(v []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return v
	}
	return buf.Bytes()
}

// objectMembers lists a JSON object's members in order, each value
// compact; ok is false when v is not an object.
func objectMembers(v []byte) ([]member, bool) {
	if len(v) == 0 || v[0] != '{' {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, ok := tok.(string)
		if !ok {
			return nil, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		out = append(out, member{key: key, val: compact(raw)})
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return out, true
}

// idElements lists a JSON array's elements keyed by their "id" when every
// element is an object with a string id, none twice; ok is false
// otherwise.
func idElements(v []byte) ([]member, bool) {
	if len(v) == 0 || v[0] != '[' {
		return nil, false
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(v, &elems); err != nil {
		return nil, false
	}
	out := make([]member, 0, len(elems))
	seen := map[string]bool{}
	for _, e := range elems {
		var obj struct {
			ID *string `json:"id"`
		}
		if len(e) == 0 || e[0] != '{' || json.Unmarshal(e, &obj) != nil || obj.ID == nil || seen[*obj.ID] {
			return nil, false
		}
		seen[*obj.ID] = true
		out = append(out, member{key: *obj.ID, val: compact(e)})
	}
	return out, true
}

// jsonDuplicateKeys reports whether v (valid JSON) has an object, at any
// depth, that names a key twice.
func jsonDuplicateKeys(v []byte) bool {
	v = compact(v)
	if ms, ok := objectMembers(v); ok {
		if index(ms) == nil {
			return true
		}
		for _, m := range ms {
			if jsonDuplicateKeys(m.val) {
				return true
			}
		}
		return false
	}
	if len(v) > 0 && v[0] == '[' {
		var elems []json.RawMessage
		if json.Unmarshal(v, &elems) != nil {
			return false
		}
		for _, e := range elems {
			if jsonDuplicateKeys(e) {
				return true
			}
		}
	}
	return false
}

// writeObject writes members as a compact JSON object.
func writeObject(ms []member) []byte {
	out := []byte{'{'}
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(appendJSONString(out, m.key), ':'), m.val...)
	}
	return append(out, '}')
}

// appendJSONString appends s as a JSON string, escaping only what JSON
// requires (not <, > and &, as json.Marshal would).
func appendJSONString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// writeArray writes the members' values as a compact JSON array.
func writeArray(ms []member) []byte {
	out := []byte{'['}
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m.val...)
	}
	return append(out, ']')
}

// layoutLike lays out v (compact JSON) as like is laid out: indented with
// like's indent when like spans lines, compact otherwise, and ending with
// a newline when like does.
func layoutLike(like, v []byte) []byte {
	body := bytes.TrimRight(like, " \t\r\n")
	var out []byte
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		rest := body[i+1:]
		indent := rest[:len(rest)-len(bytes.TrimLeft(rest, " \t"))]
		if len(indent) == 0 {
			indent = []byte("  ")
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, v, "", string(indent)); err != nil {
			return v
		}
		out = buf.Bytes()
	} else {
		out = v
	}
	if len(like) > len(body) {
		out = append(out, like[len(body):]...)
	}
	return out
}
