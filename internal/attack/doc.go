// Package attack is the stranger attack of issue 15, for the end-to-end
// test (cmd/weft, TestStrangersBounded) and the benchmark (bench, B11):
// several fresh libp2p identities, none a member of any vault, each
// opening many streams at once on weft's protocols and sending on each a
// first frame of 8 MiB, as fast as the target lets them, for a bounded
// time. It is the outsider's side only; measuring the target (its memory,
// an honest sync's time) is the caller's.
package attack
