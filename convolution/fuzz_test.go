package convolution

import (
	"testing"
	"time"

	"wap5/trace"
)

// FuzzConvolve builds traces from arbitrary bytes and checks that the
// algorithm does not panic and reports only paths it can account for.
func FuzzConvolve(f *testing.F) {
	f.Add([]byte{1, 0, 1, 1, 0, 2, 1, 1, 2, 0, 3, 2}, uint8(3))
	f.Add([]byte{0, 1, 0, 9, 3, 0, 0, 5, 200, 7, 1, 1, 3, 4, 5, 6}, uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, q uint8) {
		tr := trace.New()
		var ts int64
		for i := 0; i+3 <= len(b) && i < 600; i += 3 {
			ts += int64(b[i]) * 1e7
			m := trace.Message{Send: ts, Recv: ts + int64(b[i+2]%5)*1e6, Src: tr.Node(string('A' + rune(b[i+1]%4))), Dst: tr.Node(string('A' + rune(b[i+2]%4))),
				ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef}
			if b[i+2]%9 == 0 {
				m.Recv = trace.Unknown
			}
			tr.Add(m)
		}
		o := DefaultOptions()
		o.Quantum = time.Duration(q) * time.Millisecond
		o.MinCount = 1
		r := Convolve(tr, o)
		for _, p := range r.Patterns {
			if p.Root == nil || p.Count < 1 {
				t.Fatalf("bad pattern %+v", p)
			}
		}
	})
}
