// Package netsync holds weft's stream sessions as both kinds of node run
// them, so that a device and a relay speak each protocol with one
// implementation and cannot drift apart:
//
//   - the log protocol (/weft/log/1): LogServer answers from a LogSource
//     (a device's vault, a relay's replica), PullLog hands what arrives to
//     a LogSink (what each kind of node keeps of it);
//   - the chunk protocol (/weft/chunk/1): FetchChunks asks for a list of
//     chunks, ChunkServer answers from a source of its own (a device
//     re-creates chunks from its folder, a relay reads its store).
//
// What differs between the kinds of node (which held rule, the relay's
// own frames, who may keep a stream open) is a field or an interface the
// caller fills, not a second copy of the loop.
//
// It knows frames (protocol/wire) and a stream's deadlines, not libp2p:
// the caller opens or accepts the stream, runs the Hello, and hands the
// session a wire.Conn and the stream.
package netsync
