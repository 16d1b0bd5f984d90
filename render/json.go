package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"wap5/trace"
)

// JSON writes paths in the contract's JSON form for their algorithm
// (`wap5 link --json`, `wap5 nest --json`, `wap5 convolve --json`).
func JSON(w io.Writer, p *trace.Paths) error {
	out := jsonPaths{Algorithm: p.Algorithm, Warnings: p.Warnings}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	// The document is what one Encode of out with every pattern in it
	// gives, written a pattern at a time: the frame (out without patterns)
	// is cut where its empty pattern list is, and each pattern, encoded at
	// its depth, goes in between. No buffer holds the whole document (it
	// can be megabytes, each a page fault away).
	out.Patterns = []any{}
	var frame bytes.Buffer
	fe := json.NewEncoder(&frame)
	fe.SetIndent("", " ")
	if err := fe.Encode(out); err != nil {
		return err
	}
	const empty = "\n \"patterns\": []"
	cut := bytes.Index(frame.Bytes(), []byte(empty))
	if cut < 0 {
		return fmt.Errorf("render: JSON frame without its pattern list")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if len(p.Patterns) == 0 {
		bw.Write(frame.Bytes())
		return bw.Flush()
	}
	bw.Write(frame.Bytes()[:cut+len(empty)-1])
	var one bytes.Buffer
	pe := json.NewEncoder(&one)
	pe.SetIndent("  ", " ")
	var nj nestJSON
	for i, pat := range p.Patterns {
		var v any
		switch p.Algorithm {
		case "convolution":
			v = convolutionPattern(pat)
		case "nesting":
			// The same bytes as encoding/json's, written directly; a NaN or
			// an infinity goes to encoding/json for its error.
			nj.b, nj.bad = nj.b[:0], false
			if nj.pattern(pat); !nj.bad {
				if i > 0 {
					bw.WriteByte(',')
				}
				bw.WriteString("\n  ")
				bw.Write(nj.b)
				continue
			}
			v = jsonNestPattern{Rank: pat.Rank, Count: pat.Count, Root: nestStep(pat.Root), Metrics: pat.Metrics}
		default:
			v = jsonLinkPattern{Rank: pat.Rank, Count: pat.Count, Expected: pat.Expected,
				MaxProb: pat.MaxProb, Root: linkStep(pat.Root, true), Metrics: pat.Metrics}
		}
		one.Reset()
		if err := pe.Encode(v); err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n  ")
		bw.Write(bytes.TrimSuffix(one.Bytes(), []byte("\n")))
	}
	bw.WriteString("\n ]")
	bw.Write(frame.Bytes()[cut+len(empty):])
	return bw.Flush()
}

// Instances writes one JSON object per instance:
// {"pattern":rank,"prob":p,"ids":[...]} with the trace's message ids, or
// "L<n>" (n = message index + 1) for messages without one.
func Instances(w io.Writer, t *trace.Trace, p *trace.Paths) error {
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

// MessageID is the id a message is known by in outputs: its id= value, or
// "L<line>" for a message read from a text trace's line without id=, or
// "L<index+1>" for one that has neither (a trace built in memory).
func MessageID(t *trace.Trace, i int) string {
	if id := t.Messages[i].ID; id != trace.NoRef {
		return t.RefString(id)
	}
	return fmt.Sprintf("L%d", i+1)
}

type jsonPaths struct {
	Algorithm string   `json:"algorithm"`
	Patterns  []any    `json:"patterns"`
	Warnings  []string `json:"warnings"`
}

type jsonLinkPattern struct {
	Rank     int                `json:"rank"`
	Count    int                `json:"count"`
	Expected float64            `json:"expected"`
	MaxProb  float64            `json:"max_prob"`
	Root     *jsonLinkStep      `json:"root"`
	Metrics  map[string]float64 `json:"metrics,omitempty"`
}

type jsonLinkStep struct {
	From     string          `json:"from"`
	To       string          `json:"to"`
	Net      *float64        `json:"net_s"`
	Wait     *float64        `json:"wait_s"`
	Count    int             `json:"count"`
	NetStd   *float64        `json:"net_std_s,omitempty"`
	WaitStd  *float64        `json:"wait_std_s,omitempty"`
	Children []*jsonLinkStep `json:"children"`
}

func linkStep(s *trace.Step, root bool) *jsonLinkStep {
	if s == nil {
		return nil
	}
	o := &jsonLinkStep{From: s.From, To: s.To, Count: s.Count, Children: []*jsonLinkStep{}}
	o.Net, o.NetStd = mean(s.Net), std(s.Net)
	if !root {
		o.Wait, o.WaitStd = mean(s.Wait), std(s.Wait)
	}
	for _, c := range s.Children {
		o.Children = append(o.Children, linkStep(c, false))
	}
	return o
}

type jsonNestPattern struct {
	Rank    int                `json:"rank"`
	Count   int                `json:"count"`
	Root    *jsonNestStep      `json:"root"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

type jsonNestStep struct {
	From       string          `json:"from"`
	To         string          `json:"to"`
	CallDelay  *float64        `json:"call_delay_s"`
	Latency    *float64        `json:"latency_s"`
	Count      int             `json:"count"`
	CallDelayD *jsonDist       `json:"call_delay,omitempty"`
	LatencyD   *jsonDist       `json:"latency,omitempty"`
	Children   []*jsonNestStep `json:"children"`
}

// jsonDist is a delay distribution beyond its mean.
type jsonDist struct {
	Std  float64   `json:"std_s"`
	Min  float64   `json:"min_s"`
	Max  float64   `json:"max_s"`
	Hist *jsonHist `json:"hist,omitempty"`
}

type jsonHist struct {
	Lo     float64   `json:"lo_s"`
	Ratio  float64   `json:"ratio"`
	Counts []float64 `json:"counts"`
}

func dist(s trace.Stats) *jsonDist {
	if !s.Known() {
		return nil
	}
	d := &jsonDist{Std: round(s.Std), Min: round(s.Min), Max: round(s.Max)}
	if h := s.Hist; h != nil {
		// Trailing empty bins carry nothing; keep the leading ones so indices hold.
		n := len(h.Counts)
		for n > 0 && h.Counts[n-1] == 0 {
			n--
		}
		d.Hist = &jsonHist{Lo: h.Lo, Ratio: h.Ratio, Counts: h.Counts[:n]}
	}
	return d
}

func nestStep(s *trace.Step) *jsonNestStep {
	if s == nil {
		return nil
	}
	o := &jsonNestStep{From: s.From, To: s.To, Count: s.Count, CallDelay: mean(s.Wait), Latency: mean(s.Latency),
		CallDelayD: dist(s.Wait), LatencyD: dist(s.Latency), Children: []*jsonNestStep{}}
	for _, c := range s.Children {
		o.Children = append(o.Children, nestStep(c))
	}
	return o
}

type jsonConvPattern struct {
	Rank  int            `json:"rank"`
	Count int            `json:"count"`
	Nodes []string       `json:"nodes"`
	Edges []jsonConvEdge `json:"edges"`
}

type jsonConvEdge struct {
	Delays []float64 `json:"delays_s"`
	Count  int       `json:"count"`
}

// convolutionPattern flattens a chain of steps into nodes and edges.
func convolutionPattern(p *trace.Pattern) jsonConvPattern {
	o := jsonConvPattern{Rank: p.Rank, Count: p.Count, Edges: []jsonConvEdge{}}
	for s := p.Root; s != nil; {
		if len(o.Nodes) == 0 {
			o.Nodes = append(o.Nodes, s.From)
		}
		o.Nodes = append(o.Nodes, s.To)
		ds := make([]float64, len(s.Delays))
		for i, d := range s.Delays {
			ds[i] = round(d)
		}
		o.Edges = append(o.Edges, jsonConvEdge{Delays: ds, Count: s.Count})
		if len(s.Children) == 0 {
			break
		}
		s = s.Children[0]
	}
	return o
}

func mean(s trace.Stats) *float64 {
	if !s.Known() {
		return nil
	}
	v := round(s.Mean)
	return &v
}

func std(s trace.Stats) *float64 {
	if !s.Known() {
		return nil
	}
	v := round(s.Std)
	return &v
}

// round keeps nanosecond resolution and stable output.
func round(x float64) float64 { return math.Round(x*1e9) / 1e9 }
