package bench

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/weftsync/weft/internal/s3server"
)

// objStore is the S3 server the relays keep their chunks in with
// Config.RelayChunks "s3": one versitygw for the whole invocation
// (internal/s3server), listening on 127.0.0.1 with its POSIX backend
// under the scratch directory, one bucket, one prefix per run.
type objStore struct {
	*s3server.Server
}

// s3Bucket is the bench's bucket.
const s3Bucket = "weft-bench"

// startObjStore starts versitygw (bin, else as s3server.Binary finds it)
// with its data under dir.
func startObjStore(bin, dir string) (*objStore, error) {
	bin, err := s3server.Binary(bin)
	if err != nil {
		return nil, fmt.Errorf("versitygw for --relay-chunks s3: %w", err)
	}
	srv, err := s3server.Start(bin, filepath.Join(dir, "data"), filepath.Join(dir, "versitygw.log"))
	if err != nil {
		return nil, err
	}
	return &objStore{srv}, nil
}

// stop kills the server.
func (s *objStore) stop() { s.Stop() }

// prefix is the run's prefix in the bucket: its scratch directory's name
// (B1-relay-run0, B1-relay-fsync).
func (s *objStore) prefix(rc *runCtx) string { return filepath.Base(rc.dir) }

// relayArgs are the flags that make a relay of rc keep its chunks in s,
// and env the environment with the credentials.
func (s *objStore) relayArgs(rc *runCtx) []string {
	return []string{"--chunks", "s3://" + s3Bucket + "/" + s.prefix(rc), "--s3-endpoint", s.URL, "--s3-path-style"}
}

func (s *objStore) env() []string { return s.Env() }

// bytes is the size of the run's objects in the server's backend.
func (s *objStore) bytes(rc *runCtx) int64 {
	return dirSize(filepath.Join(s.Dir, s3Bucket, s.prefix(rc)))
}

// mObjReqs counts the relay's requests to object storage by kind
// (put, get, list, delete); parseMetrics keeps its kind label.
const mObjReqs = "weft_relay_vault_object_requests_total"

// objScrape scrapes the relay's /metrics when its chunks are in S3, and
// returns nil otherwise (pack runs stay as they were).
func (rc *runCtx) objScrape(r *relayProc) (map[string]float64, error) {
	if rc.cfg.s3 == nil {
		return nil, nil
	}
	return r.scrape(rc.ctx)
}

// addObjReqs records the relay's object PUTs and GETs between the
// scrapes m0 and m1 (objScrape) per n units of data, and its other
// requests (list, delete) as counts.
func (rc *runCtx) addObjReqs(phase string, m0, m1 map[string]float64, n float64, per string) {
	if m1 == nil {
		return
	}
	d := func(kind string) float64 { return m1[withKind(mObjReqs, kind)] - m0[withKind(mObjReqs, kind)] }
	rc.add(fmt.Sprintf("relay object PUTs per %s, %s", per, phase), "req", d("put")/n)
	rc.add(fmt.Sprintf("relay object GETs per %s, %s", per, phase), "req", d("get")/n)
	rc.add("relay object LIST+DELETE, "+phase, "req", d("list")+d("delete"))
	rc.note("relay chunks in S3: versitygw on 127.0.0.1, objects of up to 8 MiB; requests from the relay's %s, scraped at the end of each phase", mObjReqs)
}

// withKind is the key parseMetrics gives a metric's sum over the series
// labelled kind="KIND".
func withKind(name, kind string) string { return name + `{kind="` + kind + `"}` }

// labelKind is the value of the kind label in labels ({a="b",kind="c"}).
func labelKind(labels string) (string, bool) {
	for _, p := range []string{`{kind="`, `,kind="`} {
		if i := strings.Index(labels, p); i >= 0 {
			v, _, ok := strings.Cut(labels[i+len(p):], `"`)
			return v, ok
		}
	}
	return "", false
}
