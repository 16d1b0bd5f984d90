package linking

import (
	"reflect"
	"testing"
	"unsafe"

	"wap5/trace"
)

// A class is 64 bytes (classModel's comment): a large trace has millions,
// outside the heap.
func TestClassModelSize(t *testing.T) {
	if s := unsafe.Sizeof(classModel{}); s != 64 {
		t.Fatalf("classModel is %d bytes, want 64", s)
	}
}

// TestLean: with Options.Lean the result is the one without, and the
// messages made again after J6 keep every column but Bytes, Call and
// Truth (and ID without instances).
func TestLean(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   func() *trace.Trace
	}{
		{"multitier", func() *trace.Trace {
			return simulate(simConfig{clients: 6, perClient: 80, think: gauss{ms(50), ms(15)}, net: gauss{ms(0.3), ms(0.05)},
				tracelets: multiTier(6, false), seed: 5, clientName: "CLIENT"})
		}},
		{"multitier-ids", func() *trace.Trace {
			return simulate(simConfig{clients: 4, perClient: 60, think: gauss{ms(40), ms(10)}, net: gauss{ms(0.3), ms(0.05)},
				tracelets: multiTier(4, true), seed: 9, clientName: "CLIENT"})
		}},
	} {
		for _, noInst := range []bool{false, true} {
			a, b := tc.tr(), tc.tr()
			ra, err := Link(a, Options{NoInstances: noInst})
			if err != nil {
				t.Fatal(err)
			}
			rb, err := Link(b, Options{NoInstances: noInst, Lean: true})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ra, rb) {
				t.Errorf("%s (no instances %v): Lean changed the result", tc.name, noInst)
			}
			if len(a.Messages) != len(b.Messages) {
				t.Fatalf("%s: %d messages after Lean, want %d", tc.name, len(b.Messages), len(a.Messages))
			}
			for i := range a.Messages {
				want := a.Messages[i]
				want.Bytes, want.Call, want.Truth = 0, trace.NoRef, trace.NoRef
				if noInst {
					want.ID = trace.NoRef
				}
				if b.Messages[i] != want {
					t.Fatalf("%s: message %d after Lean %+v, want %+v", tc.name, i, b.Messages[i], want)
				}
			}
		}
	}
}
