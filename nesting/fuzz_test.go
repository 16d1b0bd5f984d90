package nesting

import (
	"reflect"
	"slices"
	"testing"

	"wap5/trace"
)

// FuzzNest builds traces from arbitrary bytes (times, nodes, endpoints,
// kinds, call ids, unknown timestamps) and checks that the algorithm
// neither panics nor loses track of messages, and that NestEnvelopes and
// NestEnvelopesScratch give what Nest gives.
func FuzzNest(f *testing.F) {
	f.Add([]byte{1, 0, 1, 1, 0, 2, 1, 1, 2, 0, 3, 2})
	f.Add([]byte{0, 1, 0, 9, 3, 0, 0, 5, 200, 7, 1, 1, 3, 4, 5, 6})
	f.Fuzz(func(t *testing.T, b []byte) {
		tr := trace.New()
		eps := []string{"-", "10.0.0.1:80", "10.0.0.2:40000", "unix:", "unix:/s", "10.0.0.3:*"}
		var ts int64
		for i := 0; i+4 <= len(b) && i < 400; i += 4 {
			ts += int64(b[i]) * 1e6
			m := trace.Message{Send: ts, Recv: ts + int64(b[i+3]%7)*1e6, Src: tr.Node(string('A' + rune(b[i+1]%5))), Dst: tr.Node(string('A' + rune(b[i+2]%5))),
				SrcEP: tr.Endpoint(eps[b[i+1]%6]), DstEP: tr.Endpoint(eps[b[i+2]%6]), Kind: trace.Kind(b[i+3] % 3), Call: int32(b[i+3] % 4), ID: trace.NoRef, Truth: trace.NoRef}
			if b[i]%11 == 0 {
				m.Recv = trace.Unknown
			}
			if b[i+3]%13 == 0 {
				m.Call = trace.NoRef
			}
			// Actors: none, or one of two threads per node.
			if a := b[i] % 3; a > 0 {
				m.SrcActor = tr.Actor(m.Src, string('0'+rune(a)))
			}
			if a := b[i+1] % 3; a > 0 {
				m.DstActor = tr.Actor(m.Dst, string('0'+rune(a)))
			}
			tr.Add(m)
		}
		for _, mode := range []TimeMode{TimeLocal, TimeSend} {
			o := DefaultOptions()
			o.Time, o.Smooth, o.SkewWindow = mode, 1.5, 3e6
			o.ActorChance = 1
			r := Nest(tr, o)
			if e := NestEnvelopes(tr, trace.Envelopes(tr.Messages), o); !reflect.DeepEqual(r, e) {
				t.Fatalf("Nest and NestEnvelopes differ:\n%+v\n%+v", r, e)
			}
			if e := NestEnvelopesScratch(tr, trace.Envelopes(tr.Messages), o); !reflect.DeepEqual(r, e) {
				t.Fatalf("Nest and NestEnvelopesScratch differ:\n%+v\n%+v", r, e)
			}
			// Step 1a against the keyed stable sort it replaced.
			st := &state{t: tr, msgs: trace.Envelopes(tr.Messages), opt: o}
			want, wantUn := refPairKinds(st)
			st.calls, st.pairs = make([]call, 0, len(tr.Messages)/2), make([]msgPair, 0, len(tr.Messages)/2)
			st.findCallPairs()
			st.ar.free()
			var got []msgPair
			for _, p := range st.pairs { // without the pairs by connection
				if st.msgs[p.call].Kind == trace.KindCall {
					got = append(got, p)
				}
			}
			if !slices.Equal(got, want) || wantUn > st.unpaired {
				t.Fatalf("step 1a: %v, %d unpaired; want %v, %d", got, st.unpaired, want, wantUn)
			}
			if 2*r.CallPairs+r.Unpaired != len(tr.Messages) {
				t.Fatalf("%d pairs + %d unpaired ≠ %d messages", r.CallPairs, r.Unpaired, len(tr.Messages))
			}
			n := 0
			for _, in := range r.Instances {
				n += len(in.Messages)
			}
			if n != 2*r.CallPairs {
				t.Fatalf("instances hold %d messages, want %d", n, 2*r.CallPairs)
			}
		}
	})
}
