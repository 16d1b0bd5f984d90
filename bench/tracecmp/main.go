// Command tracecmp checks that two message traces (binary or text) hold the
// same messages, whatever their order and their tables' numbering (rc10:
// reconcile's canonical output order and first-use numbering change the
// bytes of a trace, not its content).
//
// Each message is reduced to its content by name: send and receive time,
// source node and endpoint names, destination node and endpoint names,
// bytes, kind, the sending and the receiving actor's names, and for a
// return the content of the call it returns (call ids are renumbered with
// the order, so a pairing is compared by what it pairs). The two multisets
// of contents must be equal, and so must the warnings. It also reports
// where the orders differ (positions whose content differs) and whether
// each differing stretch holds messages of one time only (a reordering of
// equal-time messages), whether the second trace is in canonical order
// (time, then the content key of reconcile/canon.go), and whether its
// tables are numbered in first use.
//
//	go build -o /tmp/rc10/tracecmp ./bench/tracecmp
//	/tmp/rc10/tracecmp OLD.w5t NEW.w5t     # exit 1 when the contents differ
package main

import (
	"flag"
	"fmt"
	"hash/maphash"
	"os"
	"slices"
	"strconv"

	"wap5/trace"
)

var seed = maphash.MakeSeed()

// content hashes a message's content by name (see the package comment);
// call is the content hash of the call a return answers (0: none).
func content(t *trace.Trace, m *trace.Message, call uint64) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	b := make([]byte, 0, 128)
	b = strconv.AppendInt(b, m.Send, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, m.Recv, 10)
	b = append(b, ' ')
	b = append(b, t.NodeName(m.Src)...)
	b = append(b, ' ')
	b = append(b, t.EndpointName(m.SrcEP)...)
	b = append(b, ' ')
	b = append(b, t.NodeName(m.Dst)...)
	b = append(b, ' ')
	b = append(b, t.EndpointName(m.DstEP)...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, m.Bytes, 10)
	b = append(b, ' ', byte('0'+m.Kind), ' ')
	b = append(b, t.ActorName(m.Src, m.SrcActor)...)
	b = append(b, ' ')
	b = append(b, t.ActorName(m.Dst, m.DstActor)...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, call, 16)
	h.Write(b)
	return h.Sum64()
}

// contents returns every message's content hash, in trace order.
func contents(t *trace.Trace) []uint64 {
	out := make([]uint64, len(t.Messages))
	calls := map[int32]uint64{}
	for i := range t.Messages {
		m := &t.Messages[i]
		if m.Kind != trace.KindReturn {
			out[i] = content(t, m, 0)
			if m.Kind == trace.KindCall && m.Call >= 0 {
				calls[m.Call] = out[i]
			}
		}
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		if m.Kind == trace.KindReturn {
			c, ok := calls[m.Call]
			if !ok {
				c = 1 // a return of no call in the trace
			}
			out[i] = content(t, m, c)
		}
	}
	return out
}

func main() {
	quiet := flag.Bool("q", false, "print only the verdict")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: tracecmp [-q] OLD NEW")
		os.Exit(2)
	}
	a, err := trace.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	b, err := trace.ReadFile(flag.Arg(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ca, cb := contents(a), contents(b)
	same := len(ca) == len(cb)
	// Multisets: sorted hash lists compared.
	sa, sb := slices.Clone(ca), slices.Clone(cb)
	slices.Sort(sa)
	slices.Sort(sb)
	onlyA, onlyB := 0, 0
	for i, j := 0, 0; i < len(sa) || j < len(sb); {
		switch {
		case j == len(sb) || i < len(sa) && sa[i] < sb[j]:
			onlyA++
			i++
		case i == len(sa) || sb[j] < sa[i]:
			onlyB++
			j++
		default:
			i++
			j++
		}
	}
	same = same && onlyA == 0 && onlyB == 0
	warnSame := slices.Equal(a.Warnings, b.Warnings)
	// Order: positions whose content differs, and whether each such
	// position's time equals its counterpart's (a reordering of ties).
	moved, movedOther := 0, 0
	for i := 0; i < min(len(ca), len(cb)); i++ {
		if ca[i] != cb[i] {
			moved++
			if a.Messages[i].Time() != b.Messages[i].Time() {
				movedOther++
			}
		}
	}
	// The second trace's order and numbering.
	notSorted := 0
	for i := 1; i < len(b.Messages); i++ {
		if b.Messages[i].Time() < b.Messages[i-1].Time() {
			notSorted++
		}
	}
	ties := 0
	for i := 1; i < len(b.Messages); i++ {
		if b.Messages[i].Time() == b.Messages[i-1].Time() {
			ties++
		}
	}
	nodeFirst, epFirst, nodeUnused, epUnused := firstUse(b)
	aNodeFirst, aEpFirst, aNodeUnused, aEpUnused := firstUse(a)
	fmt.Printf("messages: %d vs %d; only in first %d, only in second %d: %s\n", len(ca), len(cb), onlyA, onlyB, verdict(same))
	fmt.Printf("warnings: %d vs %d: %s\n", len(a.Warnings), len(b.Warnings), verdict(warnSame))
	if !*quiet {
		fmt.Printf("order: %d positions differ, %d of them between messages of different times\n", moved, movedOther)
		fmt.Printf("second: %d messages earlier than the one before, %d adjacent equal times\n", notSorted, ties)
		fmt.Printf("first:  nodes %d (%d out of first-use order, %d unused), endpoints %d (%d out of first-use order, %d unused)\n",
			len(a.Nodes), aNodeFirst, aNodeUnused, len(a.Endpoints)-1, aEpFirst, aEpUnused)
		fmt.Printf("second: nodes %d (%d out of first-use order, %d unused), endpoints %d (%d out of first-use order, %d unused)\n",
			len(b.Nodes), nodeFirst, nodeUnused, len(b.Endpoints)-1, epFirst, epUnused)
	}
	if !same || !warnSame {
		os.Exit(1)
	}
}

func verdict(ok bool) string {
	if ok {
		return "SAME"
	}
	return "DIFFERENT"
}

// firstUse counts the nodes and endpoints whose id is not their rank in
// first use (message order; source before destination, node before
// endpoint), and those no message uses.
func firstUse(t *trace.Trace) (nodesOff, epsOff, nodesUnused, epsUnused int) {
	nodeRank := make([]int32, len(t.Nodes))
	epRank := make([]int32, len(t.Endpoints))
	for i := range nodeRank {
		nodeRank[i] = -1
	}
	for i := range epRank {
		epRank[i] = -1
	}
	nn, ne := int32(0), int32(1)
	epRank[0] = 0
	see := func(n trace.NodeID, e trace.EndpointID) {
		if nodeRank[n] < 0 {
			nodeRank[n] = nn
			nn++
		}
		if epRank[e] < 0 {
			epRank[e] = ne
			ne++
		}
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		see(m.Src, m.SrcEP)
		see(m.Dst, m.DstEP)
	}
	for i, r := range nodeRank {
		if r < 0 {
			nodesUnused++
		} else if int(r) != i {
			nodesOff++
		}
	}
	for i, r := range epRank {
		if r < 0 {
			epsUnused++
		} else if int(r) != i {
			epsOff++
		}
	}
	return
}
