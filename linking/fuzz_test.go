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
	// Actors (sa=/da=): two threads at b.
	f.Add([]byte("1.0 a x:1 1.1 b y:80 10 kind=call call=1 da=1/2\n1.2 b y:9 1.3 c z:7 10 kind=call call=2 sa=1/2\n" +
		"1.4 c z:7 1.5 b y:9 10 kind=return call=2 da=1/2\n1.6 b y:80 1.7 a x:1 10 kind=return call=1 sa=1/2\n" +
		"1.05 a x:2 1.15 b y:80 10 kind=call call=3 da=1/3\n1.25 b y:8 1.35 c z:7 10 kind=call call=4 sa=1/3\n" +
		"1.45 c z:7 1.55 b y:8 10 kind=return call=4 da=1/3\n1.65 b y:80 1.75 a x:2 10 kind=return call=3 sa=1/3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := trace.Read(bytes.NewReader(data), "fuzz")
		if err != nil || len(tr.Messages) > 2000 {
			return
		}
		// The third run uses the same-thread hint wherever any agreement
		// shows (the defaults need more calls than a fuzz input has).
		for k, m := range []string{MethodJoint, MethodWAP5, MethodJoint} {
			o := Options{Method: m}
			if k == 2 {
				o.ActorMin, o.ActorChance = 0.01, 1
			}
			res, err := Link(tr, o)
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
