package render

import (
	"strconv"

	"wap5/trace"
)

// linkPattern appends linking pattern pat at depth 0 as encoding/json
// encodes its jsonLinkPattern (the caller's prefix holds the pattern list's
// indentation); bad is set where encoding/json fails (a NaN or an
// infinity).
func (w *patternJSON) linkPattern(pat *trace.Pattern) {
	w.b = append(w.b, '{')
	w.keyq(1, `"rank": `)
	w.b = strconv.AppendInt(w.b, int64(pat.Rank), 10)
	w.b = append(w.b, ',')
	w.keyq(1, `"count": `)
	w.b = strconv.AppendInt(w.b, int64(pat.Count), 10)
	w.b = append(w.b, ',')
	w.keyq(1, `"expected": `)
	w.float(pat.Expected)
	w.b = append(w.b, ',')
	w.keyq(1, `"max_prob": `)
	w.float(pat.MaxProb)
	w.b = append(w.b, ',')
	w.keyq(1, `"root": `)
	w.linkStep(pat.Root, 1, true)
	if len(pat.Metrics) > 0 {
		w.b = append(w.b, ',')
		w.keyq(1, `"metrics": `)
		w.metrics(pat.Metrics, 1)
	}
	w.newline(0)
	w.b = append(w.b, '}')
}

// linkStep appends linkStep(s, root) at depth d: the wait (null) and its
// deviation (left out) only below the root, the deviations only where the
// delay is known.
func (w *patternJSON) linkStep(s *trace.Step, d int, root bool) {
	if s == nil {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = append(w.b, '{')
	w.keyq(d+1, `"from": `)
	w.str(s.From)
	w.b = append(w.b, ',')
	w.keyq(d+1, `"to": `)
	w.str(s.To)
	w.b = append(w.b, ',')
	w.keyq(d+1, `"net_s": `)
	w.mean(s.Net)
	w.b = append(w.b, ',')
	w.keyq(d+1, `"wait_s": `)
	if root {
		w.b = append(w.b, "null"...)
	} else {
		w.mean(s.Wait)
	}
	w.b = append(w.b, ',')
	w.keyq(d+1, `"count": `)
	w.b = strconv.AppendInt(w.b, int64(s.Count), 10)
	w.b = append(w.b, ',')
	if s.Net.Known() {
		w.keyq(d+1, `"net_std_s": `)
		w.rounded(s.Net.Std)
		w.b = append(w.b, ',')
	}
	if !root && s.Wait.Known() {
		w.keyq(d+1, `"wait_std_s": `)
		w.rounded(s.Wait.Std)
		w.b = append(w.b, ',')
	}
	w.keyq(d+1, `"children": `)
	w.children(s.Children, d, func(c *trace.Step) { w.linkStep(c, d+2, false) })
}
