// Package versions is a device's local version store: the content of the
// file versions a device kept so that `weft restore` works with no relay
// and no other device online (docs/history.md, "Local versions").
//
// Content lives in a store/pack chunk store, as the sealed envelopes the
// vault's peers exchange: encrypted at rest, deduplicated by CID (so a
// version that differs from the one before it in a few chunks costs those
// chunks), fsynced before they are counted, re-verified by the scrub. A
// catalog in goleveldb beside it names each kept version (the caller's
// key), its path, when it was kept and its chunks. A version is in the
// catalog only once every one of its chunks is durable in the pack.
// Prune applies a Policy (policy.go) and then lets the pack's GC free the
// chunks no retained version uses.
package versions
