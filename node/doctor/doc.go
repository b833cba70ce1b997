// Package doctor holds the rules of `weft doctor`: from facts gathered
// about a device's folders and peers to findings, each naming a cause and
// what to do about it ("why is this not in sync?"). The agent (node)
// gathers the facts from its vaults and connections; the rules are a pure
// function of them (Diagnose), so they are tested without a network or a
// disk, and every finding's kind and wording lives in one place.
//
// ErrorKind classifies the error messages of applies and scans; the
// folder status uses it too, so status and doctor name a problem alike.
package doctor
