package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand"
	"testing"

	"wap5/trace"
)

// instancesRef is Instances as it was before it wrote its lines by hand
// (main 21f7a98): encoding/json, one Encode a line.
func instancesRef(w io.Writer, t *trace.Trace, p *trace.Paths) error {
	bw := bufio.NewWriter(w)
	type inst struct {
		Pattern int      `json:"pattern"`
		Prob    float64  `json:"prob"`
		IDs     []string `json:"ids"`
	}
	enc := json.NewEncoder(bw)
	for _, in := range p.Instances {
		o := inst{Pattern: in.Pattern, Prob: round(in.Prob), IDs: make([]string, len(in.Messages))}
		for i, mi := range in.Messages {
			o.IDs[i] = MessageID(t, int(mi))
		}
		if err := enc.Encode(o); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// errAfter fails its writes once n bytes are written.
type errAfter struct {
	b bytes.Buffer
	n int
}

var errFull = errors.New("full")

func (w *errAfter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > w.n {
		return 0, errFull
	}
	return w.b.Write(p)
}

// TestInstancesReference: Instances writes what instancesRef writes, byte
// for byte (numeric ids, labels with awkward characters, line references,
// messages without ids, probabilities of every kind), fails where it fails
// (NaN, infinities) with its error, and leaves the same bytes behind when
// the writer fails.
func TestInstancesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	tr := trace.New()
	for i := 0; i < 300; i++ {
		m := trace.Message{Send: int64(i), Recv: int64(i) + 5, ID: trace.NoRef}
		switch i % 5 {
		case 0:
			m.ID = rng.Int63n(1 << 40)
		case 1:
			m.ID = tr.Ref(randomName(rng) + "x")
		case 2:
			m.ID = trace.LineRef(rng.Intn(1e6) + 1)
		case 3:
			m.ID = tr.Ref([]string{"a<b>", "q\"\\", "\u2028", "bad\xff", "L12", "-5", "007"}[rng.Intn(7)])
		}
		tr.Messages = append(tr.Messages, m)
	}
	probs := func(special bool) float64 {
		if special && rng.Intn(50) == 0 {
			return []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[rng.Intn(3)]
		}
		return randomFloat(rng, false)
	}
	for round := 0; round < 200; round++ {
		p := &trace.Paths{}
		n := rng.Intn(40)
		if round%3 == 0 {
			n = rng.Intn(400) // beyond the writer's buffer
		}
		for i := n; i > 0; i-- {
			in := trace.Instance{Pattern: rng.Intn(1000) - 1, Prob: probs(round%2 == 1)}
			for k := rng.Intn(6); k > 0; k-- {
				in.Messages = append(in.Messages, int32(rng.Intn(len(tr.Messages))))
			}
			p.Instances = append(p.Instances, in)
		}
		var got, want bytes.Buffer
		gerr, werr := Instances(&got, tr, p), instancesRef(&want, tr, p)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("round %d: error %v, encoding/json %v", round, gerr, werr)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("round %d: wrote\n%s\nencoding/json\n%s", round, got.Bytes(), want.Bytes())
		}
		limit := rng.Intn(want.Len() + 1)
		gw, ww := &errAfter{n: limit}, &errAfter{n: limit}
		gerr, werr = Instances(gw, tr, p), instancesRef(ww, tr, p)
		if (gerr == nil) != (werr == nil) || !bytes.Equal(gw.b.Bytes(), ww.b.Bytes()) {
			t.Fatalf("round %d, writer full at %d: error %v, %d bytes; encoding/json %v, %d bytes", round, limit, gerr, gw.b.Len(), werr, ww.b.Len())
		}
	}
}

// FuzzInstances: Instances writes what instancesRef writes for instances
// made from arbitrary bytes (ids and labels from them too).
func FuzzInstances(f *testing.F) {
	f.Add([]byte("\x01\x02\x03a<b>\x00\xff\x10"))
	f.Add(bytes.Repeat([]byte{7, 0, 200, 3, 1}, 30))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr := trace.New()
		for k := 0; k+1 < len(b) && k < 64; k += 2 {
			m := trace.Message{ID: trace.NoRef}
			switch b[k] % 4 {
			case 0:
				m.ID = int64(b[k+1]) * 1e9
			case 1:
				m.ID = tr.Ref(string(b[k+1 : min(len(b), k+5)]))
			case 2:
				m.ID = trace.LineRef(int(b[k+1]) + 1)
			}
			tr.Messages = append(tr.Messages, m)
		}
		if len(tr.Messages) == 0 {
			return
		}
		p := &trace.Paths{}
		for k := 0; k+2 < len(b); k += 3 {
			in := trace.Instance{Pattern: int(b[k]) - 3, Prob: float64(b[k+1]) / float64(b[k+2])}
			for n := b[k+2] % 5; n > 0; n-- {
				in.Messages = append(in.Messages, int32(int(b[k+int(n)%3])%len(tr.Messages)))
			}
			p.Instances = append(p.Instances, in)
		}
		var got, want bytes.Buffer
		gerr, werr := Instances(&got, tr, p), instancesRef(&want, tr, p)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("error %v, encoding/json %v; wrote\n%s\nencoding/json\n%s", gerr, werr, got.Bytes(), want.Bytes())
		}
	})
}
