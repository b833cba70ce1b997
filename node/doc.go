// Package node is a weft device: the libp2p host, discovery, the stream
// protocols, the folder (scanner, watcher, applier) and the loop that feeds
// the pure sync core in protocol/ and carries out its decisions.
//
// node owns the goroutines and the IO; the decisions live in protocol/.
package node
