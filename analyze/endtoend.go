package analyze

import "wap5/trace"

// endToEnd measures each pattern's response time at the node that started
// it: from the root message's send to the receipt of the last message of
// the instance that comes back to that node. Both times are read on that
// node's clock, so no offset enters. Weighted by instance probability;
// patterns whose instances never return to their first node have none.
func endToEnd(t *trace.Trace, p *trace.Paths) map[int]trace.Stats {
	acc := map[int]*trace.Accumulator{}
	for _, in := range p.Instances {
		if len(in.Messages) == 0 {
			continue
		}
		root := &t.Messages[in.Messages[0]]
		if root.Send == trace.Unknown {
			continue
		}
		last := trace.Unknown
		for _, mi := range in.Messages[1:] {
			if m := &t.Messages[mi]; m.Dst == root.Src && m.Recv != trace.Unknown && m.Recv > last {
				last = m.Recv
			}
		}
		if last == trace.Unknown {
			continue
		}
		a := acc[in.Pattern]
		if a == nil {
			a = &trace.Accumulator{}
			acc[in.Pattern] = a
		}
		a.Add(float64(last-root.Send)/1e9, in.Prob)
	}
	out := make(map[int]trace.Stats, len(acc))
	for k, a := range acc {
		out[k] = a.Stats()
	}
	return out
}
