package trace

import (
	"math/rand/v2"
	"testing"
)

// TestDecodeBlockLengths: decodeBlock gives back what encodeBlock wrote for
// varints of every length in every column (its loop decodes the one-, two-
// and three-byte cases itself, the three-byte ones of the endpoints, sizes
// and ids too, the rest through uvSlow), also where a column's last value
// is such a case, and reports a column cut short or ending in a
// continuation byte as damage.
func TestDecodeBlockLengths(t *testing.T) {
	var id3, id4 int64 // (the ids of the three- and four-byte cases: deltas of that size)
	cases := []struct {
		name string
		n    int
		set  func(r *rand.Rand, m *Message) // changes to the random message
	}{
		{"random", 3000, nil},
		{"one message", 1, nil},
		{"two-byte ids", 500, func(r *rand.Rand, m *Message) {
			m.Src, m.Dst = NodeID(128+r.IntN(16256)), NodeID(128+r.IntN(16256))
			m.SrcEP, m.DstEP = EndpointID(128+r.IntN(16256)), EndpointID(128+r.IntN(16256))
			m.Bytes = int64(128 + r.IntN(16256))
		}},
		{"three-byte endpoints", 500, func(r *rand.Rand, m *Message) {
			m.SrcEP, m.DstEP = EndpointID(1<<14+r.IntN(1<<21-1<<14)), EndpointID(1<<14+r.IntN(1<<21-1<<14))
		}},
		{"four-byte endpoints", 500, func(r *rand.Rand, m *Message) {
			m.SrcEP, m.DstEP = EndpointID(1<<21+r.IntN(1<<28-1<<21)), EndpointID(r.IntN(1<<28))
		}},
		{"three-byte sizes and ids", 500, func(r *rand.Rand, m *Message) {
			m.Bytes = int64(1<<14 + r.IntN(1<<21-1<<14))
			id3 += 1 + int64(1<<13+r.IntN(1<<20-1<<13)) // zigzag: 1<<14 … 1<<21
			m.ID = id3
		}},
		{"four-byte sizes and ids", 500, func(r *rand.Rand, m *Message) {
			m.Bytes = int64(1<<21 + r.IntN(1<<28-1<<21))
			id4 += 1 + int64(1<<20+r.IntN(1<<27-1<<20)) // zigzag: 1<<21 … 1<<28
			m.ID = id4
		}},
		{"one-byte", 500, func(r *rand.Rand, m *Message) {
			m.Src, m.Dst, m.SrcEP, m.DstEP, m.Bytes = NodeID(r.IntN(128)), NodeID(r.IntN(128)), EndpointID(r.IntN(128)), EndpointID(r.IntN(128)), int64(r.IntN(128))
		}},
	}
	r := rand.New(rand.NewPCG(3, 4))
	lim := colLimits{nodes: 1 << 32, eps: 1 << 32, minRef: -1 << 40}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msgs := randomMessages(r, c.n)
			for i := range msgs {
				if c.set != nil {
					c.set(r, &msgs[i])
				}
			}
			var cols [colCount][]byte
			encodeBlock(&cols, msgs, &colState{})
			cols[colExtra] = []byte{0} // no extra text
			decode := func(raw [colCount][]byte) (*Trace, error) {
				tr := &Trace{}
				_, err := decodeBlock(tr, &raw, len(msgs), &colState{}, &lim)
				return tr, err
			}
			tr, err := decode(cols)
			if err != nil {
				t.Fatal(err)
			}
			for i := range msgs {
				if tr.Messages[i] != msgs[i] {
					t.Fatalf("message %d: %+v, want %+v", i, tr.Messages[i], msgs[i])
				}
			}
			// Damage: each value column cut by one to three bytes, or its
			// last byte made a continuation byte.
			for col := colTime; col <= colActors; col++ {
				b := cols[col]
				if len(b) == 0 {
					continue
				}
				for cut := 1; cut <= min(3, len(b)); cut++ {
					raw := cols
					raw[col] = b[:len(b)-cut]
					if _, err := decode(raw); err == nil {
						t.Errorf("column %d cut by %d bytes: no error", col, cut)
					}
				}
				raw := cols
				raw[col] = append([]byte(nil), b...)
				raw[col][len(b)-1] |= 0x80
				if _, err := decode(raw); err == nil {
					t.Errorf("column %d ending in a continuation byte: no error", col)
				}
			}
		})
	}
}
