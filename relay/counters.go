package relay

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// BytesSent is the application payload (framing not included) this relay
// has sent to devices since New: the weft_relay_bytes_sent_total counter,
// read for callers in the same process (the simulation reports the bytes
// that went through a relay).
func (r *Relay) BytesSent() int64 { return counterValue(r.stats.bytesSent) }

// BytesReceived is the application payload this relay has received from
// devices since New (weft_relay_bytes_received_total).
func (r *Relay) BytesReceived() int64 { return counterValue(r.stats.bytesReceived) }

// counterValue reads a Prometheus counter; the counters here only ever
// add whole byte counts, so the float is exact up to 2^53.
func counterValue(c prometheus.Counter) int64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil || m.Counter == nil {
		return 0
	}
	return int64(m.Counter.GetValue())
}
