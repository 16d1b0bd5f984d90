package reconcile

import (
	"net/netip"
	"reflect"
	"testing"

	"wap5/libsockcap"
)

// copyObs must copy every field of an Observation: each set in turn to a
// non-zero value, the copy equals the original.
func TestCopyObsAllFields(t *testing.T) {
	ob := &Observer{Host: "h"}
	full := Observation{Time: 1, Op: OpSend, Proto: libsockcap.ProtoTCP, Stream: true, Role: RoleServer,
		Origin: OriginLog + 1, Observer: ob, Socket: 7,
		Local:  libsockcap.Endpoint{Addr: netip.MustParseAddrPort("10.0.0.1:80"), Path: "p", Unix: true, Inode: 3},
		Remote: libsockcap.Endpoint{Addr: netip.MustParseAddrPort("[fe80::1%eth0]:81"), Path: "q", Inode: 4},
		Offset: 5, Bytes: 6, Sum: 8, Tid: 9, HasSum: true, Loc: 10}
	v := reflect.ValueOf(full)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			t.Fatalf("test value leaves field %s zero", v.Type().Field(i).Name)
		}
		var x Observation
		reflect.ValueOf(&x).Elem().Field(i).Set(v.Field(i))
		var o Observation
		copyObs(&o, &x)
		if !reflect.DeepEqual(o, x) {
			t.Errorf("field %s not copied", v.Type().Field(i).Name)
		}
		copyObs(&o, &full) // from another observation: every field
		if !reflect.DeepEqual(o, full) {
			t.Errorf("copy over %s differs", v.Type().Field(i).Name)
		}
	}
}
