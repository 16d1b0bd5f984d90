package render

import (
	"strconv"

	"wap5/trace"
)

// linkPattern appends linking pattern pat at depth 0 as encoding/json
// encodes its jsonLinkPattern (the caller's prefix holds the pattern list's
// indentation); bad is set where encoding/json fails (a NaN or an
// infinity). The keys come with their line breaks, indentation and the
// comma before them in one piece (linkKeys), the node names pre-encoded
// (name).
func (w *patternJSON) linkPattern(pat *trace.Pattern) {
	w.b = append(w.b, "{\n   \"rank\": "...)
	w.b = strconv.AppendInt(w.b, int64(pat.Rank), 10)
	w.b = append(w.b, ",\n   \"count\": "...)
	w.b = strconv.AppendInt(w.b, int64(pat.Count), 10)
	w.b = append(w.b, ",\n   \"expected\": "...)
	w.float(pat.Expected)
	w.b = append(w.b, ",\n   \"max_prob\": "...)
	w.float(pat.MaxProb)
	w.b = append(w.b, ",\n   \"root\": "...)
	w.linkStep(pat.Root, 1, true)
	if len(pat.Metrics) > 0 {
		w.b = append(w.b, ",\n   \"metrics\": "...)
		if !w.linkMetrics(pat.Metrics) {
			w.metrics(pat.Metrics, 1)
		}
	}
	w.b = append(w.b, "\n  }"...)
}

// linkMetrics appends, at depth 1, metrics m that are exactly the four a
// linking pattern has (their keys in sorted order, as metrics writes
// them) and reports whether they were.
func (w *patternJSON) linkMetrics(m map[string]float64) bool {
	if len(m) != 4 {
		return false
	}
	depth, ok1 := m["depth"]
	esc, ok2 := m["expected_sqrt_count"]
	mp, ok3 := m["mean_prob"]
	msgs, ok4 := m["messages"]
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return false
	}
	w.b = append(w.b, "{\n    \"depth\": "...)
	w.float(depth)
	w.b = append(w.b, ",\n    \"expected_sqrt_count\": "...)
	w.float(esc)
	w.b = append(w.b, ",\n    \"mean_prob\": "...)
	w.float(mp)
	w.b = append(w.b, ",\n    \"messages\": "...)
	w.float(msgs)
	w.b = append(w.b, "\n   }"...)
	return true
}

// linkKeys are the pieces of a linking step's object at one depth d: each
// key with the comma before it and its line's start (newline(d+1)), and
// the children array's brackets and separators.
type linkKeys struct {
	from, to, net, wait, waitNull, count, netStd, waitStd, children string
	// no children and the step's end; the first child's line, a later
	// child's, and the array's and the step's ends
	noKids, kidsOpen, kidsSep, kidsEnd string
}

// keysAt returns the linkKeys of depth d.
func (w *patternJSON) keysAt(d int) *linkKeys {
	for len(w.lk) <= d {
		e := len(w.lk)
		nl := func(d int) string {
			b := []byte{'\n', ' ', ' '}
			for ; d > 0; d-- {
				b = append(b, ' ')
			}
			return string(b)
		}
		in := nl(e + 1)
		w.lk = append(w.lk, linkKeys{
			from:     "{" + in + `"from": `,
			to:       "," + in + `"to": `,
			net:      "," + in + `"net_s": `,
			wait:     "," + in + `"wait_s": `,
			waitNull: "," + in + `"wait_s": null`,
			count:    "," + in + `"count": `,
			netStd:   "," + in + `"net_std_s": `,
			waitStd:  "," + in + `"wait_std_s": `,
			children: "," + in + `"children": `,
			noKids:   "[]" + nl(e) + "}",
			kidsOpen: "[" + nl(e+2),
			kidsSep:  "," + nl(e+2),
			kidsEnd:  in + "]" + nl(e) + "}",
		})
	}
	return &w.lk[d]
}

// linkStep appends linkStep(s, root) at depth d: the wait (null) and its
// deviation (left out) only below the root, the deviations only where the
// delay is known.
func (w *patternJSON) linkStep(s *trace.Step, d int, root bool) {
	if s == nil {
		w.b = append(w.b, "null"...)
		return
	}
	k := w.keysAt(d)
	w.b = append(w.b, k.from...)
	w.name(s.From)
	w.b = append(w.b, k.to...)
	w.name(s.To)
	w.b = append(w.b, k.net...)
	w.mean(&s.Net)
	if root {
		w.b = append(w.b, k.waitNull...)
	} else {
		w.b = append(w.b, k.wait...)
		w.mean(&s.Wait)
	}
	w.b = append(w.b, k.count...)
	w.b = strconv.AppendInt(w.b, int64(s.Count), 10)
	if s.Net.W > 0 { // s.Net.Known(), without copying s.Net
		w.b = append(w.b, k.netStd...)
		w.rounded(s.Net.Std)
	}
	if !root && s.Wait.W > 0 {
		w.b = append(w.b, k.waitStd...)
		w.rounded(s.Wait.Std)
	}
	w.b = append(w.b, k.children...)
	if len(s.Children) == 0 {
		w.b = append(w.b, k.noKids...)
		return
	}
	for i, c := range s.Children {
		if i == 0 {
			w.b = append(w.b, k.kidsOpen...)
		} else {
			// k may have moved: keysAt grows w.lk.
			w.b = append(w.b, w.lk[d].kidsSep...)
		}
		w.linkStep(c, d+2, false)
	}
	w.b = append(w.b, w.lk[d].kidsEnd...)
}
