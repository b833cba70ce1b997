package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Endpoint says how to reach an object storage service.
type Endpoint struct {
	// URL is the service, "https://s3.eu-west-1.amazonaws.com" or
	// "http://127.0.0.1:7070" for a server on the same machine.
	URL string
	// Region is the bucket's region; empty lets the client ask.
	Region string
	// PathStyle addresses buckets as URL/BUCKET rather than
	// BUCKET.host (MinIO, versitygw, Ceph and most self-hosted servers
	// want it).
	PathStyle bool
	// CredentialsFile, if set, is an AWS shared credentials file (its
	// [default] profile) readable by its owner only. Empty means the
	// environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
	CredentialsFile string
}

// Location is where a relay's chunks go: a bucket and a key prefix.
type Location struct {
	Bucket string
	Prefix string // empty or ending in "/"
}

// ParseLocation parses "s3://BUCKET" or "s3://BUCKET/PREFIX".
func ParseLocation(s string) (Location, error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return Location{}, fmt.Errorf("chunk location %q: want s3://BUCKET/PREFIX", s)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return Location{}, fmt.Errorf("chunk location %q names no bucket", s)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return Location{Bucket: bucket, Prefix: prefix}, nil
}

func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Prefix }

// Connect makes a client for ep. It sends no request.
func Connect(ep Endpoint) (*minio.Client, error) {
	u, err := url.Parse(ep.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("object storage endpoint %q: want http(s)://HOST[:PORT]", ep.URL)
	}
	creds, err := credentialsFor(ep.CredentialsFile)
	if err != nil {
		return nil, err
	}
	lookup := minio.BucketLookupAuto
	if ep.PathStyle {
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds: creds, Secure: u.Scheme == "https", Region: ep.Region, BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("object storage endpoint %s: %w", ep.URL, err)
	}
	return c, nil
}

// credentialsFor reads the credentials: from file if set (refused unless
// only its owner can read it), else from the environment.
func credentialsFor(file string) (*credentials.Credentials, error) {
	if file == "" {
		if os.Getenv("AWS_ACCESS_KEY_ID") == "" || os.Getenv("AWS_SECRET_ACCESS_KEY") == "" {
			return nil, errors.New("no object storage credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or name a credentials file")
		}
		return credentials.NewEnvAWS(), nil
	}
	fi, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("object storage credentials: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("object storage credentials %s can be read by others (mode %v): chmod 600 it", file, fi.Mode().Perm())
	}
	creds := credentials.NewFileAWSCredentials(file, "default")
	if v, err := creds.GetWithContext(nil); err != nil || v.AccessKeyID == "" {
		return nil, fmt.Errorf("object storage credentials %s: no aws_access_key_id in [default] (%v)", file, err)
	}
	return creds, nil
}

// EnsureBucket creates bucket when it does not exist (and the credentials
// allow it).
func EnsureBucket(ctx context.Context, c *minio.Client, bucket, region string) error {
	ok, err := c.BucketExists(ctx, bucket)
	if err != nil {
		return fmt.Errorf("checking bucket %s: %w", bucket, err)
	}
	if ok {
		return nil
	}
	if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: region}); err != nil {
		return fmt.Errorf("creating bucket %s: %w", bucket, err)
	}
	return nil
}
