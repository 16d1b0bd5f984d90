package reconcile

import (
	"cmp"
	"math/rand"
	"slices"
	"testing"

	"wap5/trace"
)

// The block sort and merge of step 9 orders messages exactly as a sort by
// time, then content (here: send, receive, bytes) would, whatever the block
// boundaries, ties and disorder, and numbers them in that order (id=).
func TestMessagesOrder(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for _, tc := range []struct {
		name           string
		n, block, jump int
	}{
		{"empty", 0, 4, 1}, {"one block", 50, 64, 10}, {"nearly sorted", 5000, 256, 20},
		{"shuffled", 3000, 100, 1 << 30}, {"many ties", 4000, 128, 3}, {"exact blocks", 512, 128, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &matcher{t: trace.New(), names: newNamer(ByHost)}
			m.canon = newOutCanon(m.names, m.t)
			m.names.t.Node("n")
			var all []trace.Message
			for i := 0; i < tc.n; i++ {
				tm := int64(i) + int64(r.Intn(tc.jump))
				if tc.jump == 3 {
					tm = int64(i / 10)
				}
				msg := trace.Message{Send: tm, Recv: trace.Unknown, Bytes: int64(r.Intn(1000)), ID: trace.NoRef, Call: trace.NoRef}
				if r.Intn(5) == 0 {
					msg.Send, msg.Recv = trace.Unknown, tm
				}
				all = append(all, msg)
				if len(m.chunk) == tc.block {
					m.chunks = append(m.chunks, m.chunk)
					m.chunk = nil
				}
				m.chunk = append(m.chunk, msg)
			}
			m.messages()
			want := slices.Clone(all)
			slices.SortStableFunc(want, func(a, b trace.Message) int {
				return cmp.Or(cmp.Compare(a.Time(), b.Time()), cmp.Compare(a.Send, b.Send), cmp.Compare(a.Recv, b.Recv), cmp.Compare(a.Bytes, b.Bytes))
			})
			if len(m.t.Messages) != len(want) {
				t.Fatalf("%d messages, want %d", len(m.t.Messages), len(want))
			}
			for i := range want {
				want[i].ID = int64(i)
				if m.t.Messages[i] != want[i] {
					t.Fatalf("position %d: message %d (id %d), want %d", i, m.t.Messages[i].Bytes, m.t.Messages[i].ID, want[i].Bytes)
				}
			}
		})
	}
}
