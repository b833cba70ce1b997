package s3store_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/weftsync/weft/internal/s3test"
	"github.com/weftsync/weft/store/storetest"
)

// TestConformance runs the chunk store suite against a real S3 server
// (versitygw), one bucket per subtest.
func TestConformance(t *testing.T) {
	srv := s3test.Start(t)
	client := srv.Client(t)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		return newBackend(t, client, fmt.Sprintf("conf-%d", n.Add(1)))
	})
}
