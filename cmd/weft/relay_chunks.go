package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/weftsync/weft/relay"
	"github.com/weftsync/weft/store/s3store"
)

// chunkFlags say where a relay keeps its vaults' chunks: pack files on its
// disk (the default) or S3-compatible object storage.
type chunkFlags struct {
	chunks    string
	endpoint  string
	region    string
	pathStyle bool
	credsFile string
}

func (f *chunkFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.chunks, "chunks", "", "keep the vaults' chunks in object storage at s3://BUCKET/PREFIX (default: pack files in the relay's home); credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or --s3-credentials")
	fs.StringVar(&f.endpoint, "s3-endpoint", "https://s3.amazonaws.com", "object storage endpoint for --chunks, e.g. http://127.0.0.1:7070 for a server on this machine")
	fs.StringVar(&f.region, "s3-region", "", "the bucket's region (default: asked of the endpoint)")
	fs.BoolVar(&f.pathStyle, "s3-path-style", false, "address the bucket as ENDPOINT/BUCKET (MinIO, versitygw, Ceph and most self-hosted servers)")
	fs.StringVar(&f.credsFile, "s3-credentials", "", "AWS shared credentials file ([default] profile, mode 0600) instead of the environment")
}

// stores opens the object storage --chunks names, creating the bucket
// when it is missing and the credentials allow it; nil means pack files.
func (f *chunkFlags) stores(ctx context.Context) (relay.ChunkStores, error) {
	if f.chunks == "" {
		return nil, nil
	}
	loc, err := s3store.ParseLocation(f.chunks)
	if err != nil {
		return nil, exitUsage{fmt.Errorf("--chunks: %w", err)}
	}
	client, err := s3store.Connect(s3store.Endpoint{URL: f.endpoint, Region: f.region, PathStyle: f.pathStyle, CredentialsFile: f.credsFile})
	if err != nil {
		return nil, exitUsage{err}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s3store.EnsureBucket(ctx, client, loc.Bucket, f.region); err != nil {
		return nil, fmt.Errorf("object storage at %s: %w", f.endpoint, err)
	}
	return relay.S3Chunks(client, loc), nil
}
