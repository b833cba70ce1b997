// Package chunkrec is the framing of one stored chunk: a record of magic,
// CRC-32C, lengths, CID and the encrypted chunk. Pack files
// (store/pack) and the objects of the S3 store (store/s3store) are both
// plain sequences of these records, so either can be re-indexed from its
// data alone, and a torn or damaged record is recognised without trusting
// anything after it.
package chunkrec
