package relay

import (
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ipfs/go-cid"
	"github.com/minio/minio-go/v7"

	"github.com/weftsync/weft/protocol/keys"
	"github.com/weftsync/weft/store/chunkstore"
	"github.com/weftsync/weft/store/pack"
	"github.com/weftsync/weft/store/s3store"
)

// ChunkStores opens the chunk store of vault's replica, whose local
// directory is dir. onQuarantine is told of chunks found corrupt or gone
// once the store is in use. A relay keeps every vault's chunks in one
// kind of store.
type ChunkStores func(vault keys.VaultID, dir string, log *slog.Logger, onQuarantine func([]cid.Cid, chunkstore.FoundBy)) (chunkstore.Store, error)

// PackChunks keeps each vault's chunks in pack files on the relay's own
// disk, in the replica's directory (dir/chunks): the default.
func PackChunks(_ keys.VaultID, dir string, log *slog.Logger, onQuarantine func([]cid.Cid, chunkstore.FoundBy)) (chunkstore.Store, error) {
	if _, err := os.Stat(filepath.Join(dir, S3IndexDir)); err == nil {
		return nil, fmt.Errorf("the replica in %s keeps its chunks in object storage: give the relay's --chunks flags", dir)
	}
	return pack.Open(pack.Config{Dir: filepath.Join(dir, "chunks"), Logger: log, OnQuarantine: onQuarantine})
}

// S3IndexDir is where a replica keeps the local index of its chunks in
// object storage. It is derived state: deleted, it is rebuilt from the
// objects at the next start (docs/relay.md).
const S3IndexDir = "chunks-s3index"

// S3Chunks keeps each vault's chunks in object storage at loc, under
// loc.Prefix + the vault's ID + "/", with a local index in the replica's
// directory (dir/chunks-s3index). The bucket must exist
// (s3store.EnsureBucket).
func S3Chunks(client *minio.Client, loc s3store.Location) ChunkStores {
	return func(vault keys.VaultID, dir string, log *slog.Logger, onQuarantine func([]cid.Cid, chunkstore.FoundBy)) (chunkstore.Store, error) {
		s, err := s3store.Open(s3store.Config{
			Client: client, Bucket: loc.Bucket, Prefix: loc.Prefix + hex.EncodeToString(vault[:]) + "/",
			IndexDir: filepath.Join(dir, S3IndexDir), Logger: log, OnQuarantine: onQuarantine,
		})
		if err != nil {
			return nil, fmt.Errorf("chunks in %s: %w", loc, err)
		}
		return s, nil
	}
}
