package linking

import (
	"testing"
	"time"

	"wap5/trace"
)

// TestAnyActorMatchesScan: hasActors as indexEdges noted it (counted) is
// the scan of the messages it replaces, with and without actors, and with
// one actor on the last message only (a source or a destination).
func TestAnyActorMatchesScan(t *testing.T) {
	scan := func(msgs []trace.Message) bool {
		for i := range msgs {
			if msgs[i].SrcActor != trace.NoActor || msgs[i].DstActor != trace.NoActor {
				return true
			}
		}
		return false
	}
	last := func(src bool) *trace.Trace {
		tr := actorTrace(5, 5, "")
		a := tr.Actor(tr.Messages[0].Src, "100/101")
		m := &tr.Messages[len(tr.Messages)-1]
		if src {
			m.SrcActor = a
		} else {
			m.DstActor = a
		}
		return tr
	}
	for name, tr := range map[string]*trace.Trace{
		"none":        actorTrace(5, 5, ""),
		"per-request": actorTrace(5, 5, "per-request"),
		"last src":    last(true),
		"last dst":    last(false),
	} {
		want := scan(tr.Messages)
		if name == "none" == want {
			t.Fatalf("%s: the scan finds actors %v", name, want)
		}
		l := newLinker(tr, Options{Method: MethodJoint, Window: 300 * time.Millisecond}.Defaults(), nil)
		if !l.counted {
			t.Fatalf("%s: indexEdges did not count", name)
		}
		j := &joint{linker: l}
		if got := j.hasActors(); got != want {
			t.Errorf("%s: hasActors %v, the scan %v", name, got, want)
		}
		l.counted = false // the scan itself
		if got := j.hasActors(); got != want {
			t.Errorf("%s: hasActors (not counted) %v, the scan %v", name, got, want)
		}
	}
}
