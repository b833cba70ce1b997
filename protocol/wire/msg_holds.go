package wire

import (
	"bytes"

	"github.com/weftsync/weft/protocol/keys"
)

// MaxHoldsDevices bounds the devices of one Holds message; a relay with
// more to tell sends several.
const MaxHoldsDevices = 256

// DeviceHolds is what one member device holds in full (entries and their
// content), as its last LogStatus to a relay said.
type DeviceHolds struct {
	Device keys.DeviceID
	Vector []VectorEntry
}

// Holds is sent by a relay on a log stream a device opened to it: what
// other member devices of the vault hold in full, as the relay last heard
// from each (their LogStatus on the relay's own log streams to them). Two
// devices that reach each other only through the relay's store never
// exchange a LogStatus; with it each can tell whether the other holds
// everything it holds (status peers[].in_sync). It is as trustworthy as
// the relay. Each message replaces what the receiver knows of the devices
// it lists, and only those.
//
// Payload layout:
//
//	count (uvarint) | count x ( device (32) | vector (as in LogRequest) )
//
// Devices are strictly increasing by bytes.
type Holds struct {
	Devices []DeviceHolds
}

// AppendBinary appends the payload of h to b. The caller sorts Devices and
// keeps to MaxHoldsDevices and the frame size; extra devices are cut.
func (h Holds) AppendBinary(b []byte) []byte {
	ds := h.Devices
	if len(ds) > MaxHoldsDevices {
		ds = ds[:MaxHoldsDevices]
	}
	b = appendUvarint(b, uint64(len(ds)))
	for _, d := range ds {
		b = append(b, d.Device[:]...)
		b = appendVector(b, d.Vector)
	}
	return b
}

// ParseHolds parses a Holds payload.
func ParseHolds(p []byte) (Holds, error) {
	ps := parser{b: p}
	n := ps.count("device count", 33, MaxHoldsDevices)
	out := Holds{Devices: make([]DeviceHolds, 0, n)}
	for i := 0; i < n && ps.err == nil; i++ {
		var d DeviceHolds
		copy(d.Device[:], ps.fixed(32, "holds device"))
		if i > 0 && bytes.Compare(out.Devices[i-1].Device[:], d.Device[:]) >= 0 {
			ps.fail("holds devices not strictly increasing")
		}
		d.Vector = ps.vector()
		out.Devices = append(out.Devices, d)
	}
	if err := ps.end(); err != nil {
		return Holds{}, err
	}
	return out, nil
}
