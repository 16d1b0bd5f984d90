package linking

import (
	"bytes"
	"testing"

	"wap5/trace"
)

// FuzzLink: any trace the reader accepts links without panicking, with
// both methods, and every instance names valid messages.
func FuzzLink(f *testing.F) {
	f.Add([]byte("# wap5 message trace v1\n1.0 a 1.1.1.1:1 1.1 b 2.2.2.2:80 10\n1.2 b 2.2.2.2:80 1.3 a 1.1.1.1:1 10\n"))
	f.Add([]byte("1.0 a - - b 2.2.2.2:80 10 kind=call call=1\n- b 2.2.2.2:80 1.5 a - 10 kind=return call=1\n"))
	f.Add([]byte("5 a x:1 1 b y:2 1\n4 b y:2 3 a x:1 1\n0 a x:1 9 a x:1 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.Read(bytes.NewReader(data), "fuzz")
		if err != nil || len(tr.Messages) > 2000 {
			return
		}
		for _, m := range []string{MethodJoint, MethodWAP5} {
			res, err := Link(tr, Options{Method: m})
			if err != nil {
				continue
			}
			for _, in := range res.Instances {
				for _, i := range in.Messages {
					if i < 0 || int(i) >= len(tr.Messages) {
						t.Fatalf("%s: instance message %d out of range", m, i)
					}
				}
			}
		}
	})
}
