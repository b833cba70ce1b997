// Package seal is a scan's sealing of large files: the file cut into
// content-defined chunks on one goroutine, each chunk sealed on every core
// beside the whole-file hash, results in chunk order (File); and what a
// device remembers of the chunks it sealed or opened (IDs), so that an
// edit re-seals only the chunks it changed and a served chunk is
// re-created with the choices it was sealed with. It knows nothing of the
// vault, the store or the network.
package seal
