package linking

import (
	"math"
	"testing"
	"time"
)

// spanHeadRef is spanHeadOf as it was before setSpanHead: a literal
// returned by value.
func (j *joint) spanHeadRef(c int32) spanHead {
	h := &j.hot[c]
	hd := spanHead{reply: -1, ci: -1, rs: math.MaxInt64, start: h.recv, recv: h.recv, h: h.half}
	hd.reqEdge, hd.reqRet = h.edge, h.role == roleReply
	switch hd.h {
	case halfNone:
		hd.reply = h.peer
		hr := &j.hot[hd.reply]
		hd.rs, hd.replyReq = hr.send, hr.role == roleRequest
		hd.replyEdge, hd.replyRet = hr.edge, hr.role == roleReply || hr.half == halfHead
	case halfHead:
		hd.reply, hd.rs, hd.start = c, h.send, math.MinInt64
		hd.replyReq = h.role == roleRequest
		hd.replyEdge, hd.replyRet = h.edge, h.role == roleReply || h.half == halfHead
	}
	if hd.h != halfHead {
		hd.fan = j.fanOf(c)
	}
	hd.ci = j.spanCiOf(c)
	return hd
}

// TestAppendSpanHead: appendSpanHead writes every field of the span head
// spanHeadRef gives, over a slot that held another span's head (the
// repair reuses its arrays from node to node), and the reply's send time
// assignSpan takes from the head (rs) is the reply's record's; on a trace
// with loss (half spans), concurrency and an untraced node.
func TestAppendSpanHead(t *testing.T) {
	cases := []simConfig{
		{clients: 6, perClient: 150, think: gauss{ms(20), ms(5)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: pathological("children-d/cc"), seed: 8, loss: 0.02, clientName: "CLIENT"},
		{clients: 5, perClient: 120, think: gauss{ms(40), ms(10)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: cdn(), seed: 4, untraced: []string{"ORIGIN"}, clientName: "CLIENT"},
	}
	defer func() { afterJoint = nil }()
	for ci, c := range cases {
		tr := simulate(c)
		checked, halves := 0, 0
		afterJoint = func(j *joint) {
			// Two slots, each written over the other's head in turn.
			heads := make([]spanHead, 0, 2)
			for c := range j.hot {
				h := &j.hot[c]
				// (Whole spans' requests, and every half span's message:
				// an open request or a headless span's send.)
				if h.half == halfNone && (h.role != roleRequest || h.peer < 0) {
					continue
				}
				want := j.spanHeadRef(int32(c))
				heads = j.appendSpanHead(heads[:checked%2], int32(c))
				if got := heads[len(heads)-1]; got != want {
					t.Fatalf("case %d: request %d: span head %+v, want %+v", ci, c, got, want)
				}
				if got := j.spanHeadOf(int32(c)); got != want {
					t.Fatalf("case %d: request %d: spanHeadOf %+v, want %+v", ci, c, got, want)
				}
				if want.reply >= 0 && want.rs != j.hot[want.reply].send {
					t.Fatalf("case %d: request %d: head's rs %d, reply's send %d", ci, c, want.rs, j.hot[want.reply].send)
				}
				if h.half != halfNone {
					halves++
				}
				checked++
			}
		}
		if _, err := Link(tr, Options{Window: 200 * time.Millisecond, Top: 0}); err != nil {
			t.Fatal(err)
		}
		if checked < 100 {
			t.Errorf("case %d: %d span heads checked", ci, checked)
		}
		if ci == 0 && halves == 0 {
			t.Errorf("case %d: no half span checked", ci)
		}
	}
}
