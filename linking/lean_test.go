package linking

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
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

// TestLean: with Options.Lean the result is the one without, for both
// methods (the joint linker drops the messages for its passes, WAP5's
// steps pack them in place), and the messages made again keep every
// column but Bytes, Call and Truth (and ID without instances).
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
		{"untraced-actors", func() *trace.Trace {
			// Untraced peers (times unknown on one side), ids far apart
			// and out of order (varints of several bytes, negative
			// differences) and actors on some messages.
			tr := simulate(simConfig{clients: 5, perClient: 70, think: gauss{ms(30), ms(10)}, net: gauss{ms(0.4), ms(0.1)},
				tracelets: multiTier(5, true), untraced: []string{"DB"}, seed: 11, clientName: "CLIENT"})
			// Endpoints: a new port per message at the clients, one
			// fixed port elsewhere, so that clients are aggregated.
			ep := func(n trace.NodeID, i int) trace.EndpointID {
				if name := tr.NodeName(n); strings.HasPrefix(name, "CLIENT") {
					return tr.Endpoint(fmt.Sprintf("%s:%d", name, 1024+i))
				}
				return tr.Endpoint(tr.NodeName(n) + ":80")
			}
			for i := range tr.Messages {
				m := &tr.Messages[i]
				m.SrcEP, m.DstEP = ep(m.Src, i), ep(m.Dst, i)
				m.ID = int64(i%7)*1e12 + int64(len(tr.Messages)-i)*1e6
				if i%3 == 0 {
					m.SrcActor = tr.Actor(m.Src, fmt.Sprint("t", i%5))
				}
				if i%4 == 1 {
					m.DstActor = tr.Actor(m.Dst, fmt.Sprint("u", i%3))
				}
			}
			return tr
		}},
	} {
		for _, o := range []Options{
			{Method: MethodJoint}, {Method: MethodJoint, AggregateClients: true}, {Method: MethodWAP5}, {Method: MethodWAP5, Iterate: true},
			{Method: MethodWAP5, Iterate: true, MaxIterations: 1}, {Method: MethodWAP5, AggregateClients: true},
		} {
			for _, noInst := range []bool{false, true} {
				a, b := tc.tr(), tc.tr()
				o.NoInstances = noInst
				ra, err := Link(a, o)
				if err != nil {
					t.Fatal(err)
				}
				ol := o
				ol.Lean = true
				rb, err := Link(b, ol)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(ra, rb) {
					t.Errorf("%s (%+v): Lean changed the result", tc.name, o)
				}
				if len(ra.Instances) == 0 && !noInst {
					t.Errorf("%s (%+v): no instances", tc.name, o)
				}
				if noInst {
					// DropMessages: the same result, and no messages
					// left but where clients are aggregated (their
					// labels are found from the messages made again).
					c := tc.tr()
					od := ol
					od.DropMessages = true
					rc, err := Link(c, od)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(ra, rc) {
						t.Errorf("%s (%+v): DropMessages changed the result", tc.name, o)
					}
					want := len(a.Messages)
					if !o.AggregateClients {
						want = 0
					}
					if len(c.Messages) != want {
						t.Errorf("%s (%+v): %d messages after DropMessages, want %d", tc.name, o, len(c.Messages), want)
					}
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
						t.Fatalf("%s (%+v): message %d after Lean %+v, want %+v", tc.name, o, i, b.Messages[i], want)
					}
				}
			}
		}
	}
}

// TestLastVarint reads varints back from the end of their stream.
func TestLastVarint(t *testing.T) {
	for _, vs := range [][]int64{{0}, {1, -1, 63, -64, 64, -65}, {math.MaxInt64, math.MinInt64, 0, 300, -300, 1 << 40}} {
		var b []byte
		for _, v := range vs {
			b = binary.AppendVarint(b, v)
		}
		for i := len(vs) - 1; i >= 0; i-- {
			v, k := lastVarint(b)
			if v != vs[i] {
				t.Fatalf("%v: value %d read back as %d", vs, vs[i], v)
			}
			b = b[:len(b)-k]
		}
		if len(b) != 0 {
			t.Fatalf("%v: %d bytes left", vs, len(b))
		}
	}
}

// TestLinkEnvelopes: LinkEnvelopes over a trace's envelopes gives Link's
// result (WAP5, Lean, DropMessages, no instances), also from envelopes out
// of time order (Trace.Sort's stable order) and with several iterations;
// options it does not suffice for are refused.
func TestLinkEnvelopes(t *testing.T) {
	multitier := func() *trace.Trace {
		return simulate(simConfig{clients: 6, perClient: 80, think: gauss{ms(50), ms(15)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: multiTier(6, false), seed: 5, clientName: "CLIENT"})
	}
	untraced := func() *trace.Trace {
		tr := simulate(simConfig{clients: 5, perClient: 70, think: gauss{ms(30), ms(10)}, net: gauss{ms(0.4), ms(0.1)},
			tracelets: multiTier(5, true), untraced: []string{"DB"}, seed: 11, clientName: "CLIENT"})
		for i := range tr.Messages {
			m := &tr.Messages[i]
			m.SrcEP, m.DstEP = tr.Endpoint(fmt.Sprint(tr.NodeName(m.Src), ":", i%9)), tr.Endpoint(tr.NodeName(m.Dst)+":80")
			if i%3 == 0 {
				m.SrcActor = tr.Actor(m.Src, fmt.Sprint("t", i%5))
			}
			if i%4 == 1 {
				m.DstActor = tr.Actor(m.Dst, fmt.Sprint("u", i%3))
			}
		}
		return tr
	}
	// shuffled moves every 7th message to the end and swaps neighbours
	// with equal times' order kept by the stable sort.
	shuffled := func() *trace.Trace {
		tr := untraced()
		var front, back []trace.Message
		for i, m := range tr.Messages {
			if i%7 == 3 {
				back = append(back, m)
			} else {
				front = append(front, m)
			}
		}
		tr.Messages = append(front, back...)
		return tr
	}
	base := Options{Method: MethodWAP5, Lean: true, DropMessages: true, NoInstances: true}
	iter := base
	iter.Iterate, iter.MaxIterations = true, 3
	gamma := base
	gamma.DelayModel = DelayGamma
	for _, tc := range []struct {
		name string
		tr   func() *trace.Trace
		o    Options
	}{
		{"multitier", multitier, base},
		{"multitier-iterate", multitier, iter},
		{"untraced-actors", untraced, base},
		{"untraced-gamma", untraced, gamma},
		{"out-of-order", shuffled, base},
	} {
		a, b := tc.tr(), tc.tr()
		want, err := Link(a, tc.o)
		if err != nil {
			t.Fatal(err)
		}
		env := trace.Envelopes(b.Messages)
		b.Messages = nil
		got, err := LinkEnvelopes(b, env, tc.o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: LinkEnvelopes' result differs from Link's", tc.name)
		}
		if len(b.Messages) != 0 {
			t.Errorf("%s: %d messages after LinkEnvelopes", tc.name, len(b.Messages))
		}
	}
	for _, o := range []Options{
		{Method: MethodJoint, Lean: true, DropMessages: true, NoInstances: true},
		{Method: MethodWAP5, Lean: true, DropMessages: true},
		{Method: MethodWAP5, Lean: true, NoInstances: true},
		{Method: MethodWAP5, Lean: true, DropMessages: true, NoInstances: true, AggregateClients: true},
		{Method: MethodWAP5, Lean: true, DropMessages: true, NoInstances: true, Stream: time.Second},
	} {
		tr := multitier()
		env := trace.Envelopes(tr.Messages)
		tr.Messages = nil
		if EnvelopesSuffice(o) {
			t.Errorf("%+v: EnvelopesSuffice", o)
		}
		if _, err := LinkEnvelopes(tr, env, o); err == nil {
			t.Errorf("%+v: LinkEnvelopes accepted it", o)
		}
	}
}
