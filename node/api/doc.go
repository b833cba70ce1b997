// Package api is the vocabulary of weft's local API: the JSON bodies of
// every request and answer of the agent's HTTP API (docs/api.md), the
// events of its event stream, and the bus that fans those events out.
// The agent (node) produces them, and the CLI (cmd/weft), the benchmark
// harness (bench) and the simulation read them, without depending on the
// agent itself.
//
// It holds data and the rules that belong to the data (a version
// policy's budget), nothing that reads a vault.
package api
