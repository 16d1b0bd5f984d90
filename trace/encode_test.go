package trace

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"
)

// encodeBlockRows is the single-pass column encoder encodeBlock replaced:
// the reference its output must equal byte for byte.
func encodeBlockRows(cols *[colCount][]byte, block []Message, st *colState) {
	flags, tm, rv := cols[colFlags], cols[colTime], cols[colRecv]
	nodes, eps, by := cols[colNodes], cols[colEPs], cols[colBytes]
	ids, calls, truths, actors := cols[colID], cols[colCall], cols[colTruth], cols[colActors]
	prevTime, prevID, prevCall, prevTru := st.prevTime, st.prevID, st.prevCall, st.prevTru
	for i := range block {
		m := &block[i]
		fl := byte(m.Kind) << bfKindShift
		if m.Send == Unknown {
			fl |= bfSendUnknown
			tm = appendSv(tm, m.Recv-prevTime)
			prevTime = m.Recv
		} else {
			tm = appendSv(tm, m.Send-prevTime)
			prevTime = m.Send
			if m.Recv == Unknown {
				fl |= bfRecvUnknown
			} else {
				rv = appendSv(rv, m.Recv-m.Send)
			}
		}
		nodes = appendUv(nodes, uint64(m.Src))
		nodes = appendUv(nodes, uint64(m.Dst))
		eps = appendUv(eps, uint64(m.SrcEP))
		eps = appendUv(eps, uint64(m.DstEP))
		by = appendUv(by, uint64(m.Bytes))
		if m.ID != NoRef {
			fl |= bfID
			ids = appendSv(ids, m.ID-prevID-1)
			prevID = m.ID
		}
		if m.Call != NoRef {
			fl |= bfCall
			calls = appendSv(calls, int64(m.Call)-int64(prevCall))
			prevCall = m.Call
		}
		if m.Truth != NoRef {
			fl |= bfTruth
			truths = appendSv(truths, int64(m.Truth)-int64(prevTru))
			prevTru = m.Truth
		}
		if m.SrcActor != NoActor || m.DstActor != NoActor {
			fl |= colActorsFlag
			actors = appendUv(actors, uint64(m.SrcActor))
			actors = appendUv(actors, uint64(m.DstActor))
		}
		flags = append(flags, fl)
	}
	st.prevTime, st.prevID, st.prevCall, st.prevTru = prevTime, prevID, prevCall, prevTru
	cols[colFlags], cols[colTime], cols[colRecv] = flags, tm, rv
	cols[colNodes], cols[colEPs], cols[colBytes] = nodes, eps, by
	cols[colID], cols[colCall], cols[colTruth], cols[colActors] = ids, calls, truths, actors
}

// randomMessages makes n messages with every field's cases: unknown send
// or receive, absent id, call, truth and actors, negative deltas, large
// values.
func randomMessages(r *rand.Rand, n int) []Message {
	msgs := make([]Message, n)
	t := int64(1700000000e9)
	for i := range msgs {
		t += r.Int64N(2e6) - 1e5
		m := Message{Send: t, Recv: t + r.Int64N(1e7) - 1e3, ID: int64(i), Bytes: r.Int64N(1 << uint(r.IntN(40))),
			Src: NodeID(r.IntN(300)), Dst: NodeID(r.IntN(300)), SrcEP: EndpointID(r.IntN(1 << 21)), DstEP: EndpointID(r.IntN(200)),
			Call: int32(r.IntN(1 << 20)), Truth: int32(r.IntN(1000)), Kind: Kind(r.IntN(4)),
			SrcActor: ActorID(r.IntN(70000)), DstActor: ActorID(r.IntN(3))}
		switch r.IntN(8) {
		case 0:
			m.Send = Unknown
		case 1:
			m.Recv = Unknown
		}
		if r.IntN(4) == 0 {
			m.ID = NoRef
		} else if r.IntN(4) == 0 {
			m.ID = -2 - int64(r.IntN(5)) // a label
		}
		if r.IntN(3) == 0 {
			m.Call = NoRef
		}
		if r.IntN(3) == 0 {
			m.Truth = NoRef
		}
		if r.IntN(3) == 0 {
			m.SrcActor, m.DstActor = NoActor, NoActor
		} else if r.IntN(5) == 0 {
			m.SrcActor = NoActor
		}
		msgs[i] = m
	}
	return msgs
}

func TestEncodeBlockAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name   string
		blocks []int // message counts of the blocks, encoded in turn
	}{
		{"empty", []int{0}},
		{"one", []int{1}},
		{"several blocks", []int{7, 1, 300}},
		{"large", []int{5000, 4096, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got, want [colCount][]byte
			var sg, sw colState
			for _, n := range c.blocks {
				msgs := randomMessages(r, n)
				encodeBlock(&got, msgs, &sg)
				encodeBlockRows(&want, msgs, &sw)
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("column %d: %d bytes, want %d (first difference at %d)", i, len(got[i]), len(want[i]), firstDiff(got[i], want[i]))
				}
			}
			if sg != sw {
				t.Errorf("state %+v, want %+v", sg, sw)
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// BenchmarkEncodeBlock (columns: encodeBlock; rows: the reference) encodes the messages of the binary trace in
// $WAP5_BENCH_TRACE (e.g. wap5 reconcile's output of the loopback logs),
// else 1M random ones, in pieces of 4,096 as reconcile hands them over.
func BenchmarkEncodeBlock(b *testing.B) {
	var msgs []Message
	if f := os.Getenv("WAP5_BENCH_TRACE"); f != "" {
		t, err := ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		msgs = t.Messages
	} else {
		msgs = randomMessages(rand.New(rand.NewPCG(1, 2)), 1<<20)
	}
	var cols [colCount][]byte
	for i := range cols {
		cols[i] = make([]byte, 0, 4*colBlock)
	}
	for _, enc := range []struct {
		name string
		f    func(*[colCount][]byte, []Message, *colState)
	}{{"columns", encodeBlock}, {"rows", encodeBlockRows}} {
		b.Run(enc.name, func(b *testing.B) {
			for range b.N {
				var st colState
				for p := 0; p < len(msgs); p += 4096 {
					for i := range cols {
						cols[i] = cols[i][:0]
					}
					enc.f(&cols, msgs[p:min(p+4096, len(msgs))], &st)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/msg")
		})
	}
}
