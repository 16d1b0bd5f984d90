package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"wap5/trace"
)

// JSON writes paths in the contract's JSON form for their algorithm
// (`wap5 link --json`, `wap5 nest --json`, `wap5 convolve --json`).
func JSON(w io.Writer, p *trace.Paths) error {
	pw := NewPathsWriter(w, p.Algorithm)
	for _, pat := range p.Patterns {
		if err := pw.Pattern(pat); err != nil {
			return err
		}
	}
	return pw.Close(p.Warnings)
}

// PathsWriter writes the document JSON writes a pattern at a time, for a
// caller that makes the patterns one by one (wap5 link hands each over as
// it is built): Pattern for every pattern in rank order, then Close with
// the warnings (they follow the patterns in the document). The bytes are
// JSON's for the same paths. The patterns are appended to one buffer,
// written out whenever it holds pathsFlush bytes and by Close (an error is
// returned by that call and every later one; after an error nothing more
// is written).
type PathsWriter struct {
	w         io.Writer
	algorithm string
	n         int // patterns written
	one       bytes.Buffer
	pe        *json.Encoder
	nj        patternJSON // its b is the buffer
	err       error
}

// pathsFlush is how many bytes PathsWriter gathers before it writes them:
// few writes for a document of hundreds of megabytes, in a buffer that
// stays in the processor's second-level cache.
const pathsFlush = 128 << 10

// NewPathsWriter starts a document for patterns of algorithm on w; nothing
// is written before the first pattern (or Close).
func NewPathsWriter(w io.Writer, algorithm string) *PathsWriter {
	pw := &PathsWriter{w: w, algorithm: algorithm}
	pw.nj.b = make([]byte, 0, pathsFlush+pathsFlush/2)
	pw.pe = json.NewEncoder(&pw.one)
	pw.pe.SetIndent("  ", " ")
	return pw
}

// flush writes the buffer out.
func (pw *PathsWriter) flush() error {
	if len(pw.nj.b) > 0 {
		_, pw.err = pw.w.Write(pw.nj.b)
		pw.nj.b = pw.nj.b[:0]
	}
	return pw.err
}

// frame is the document without patterns (what one Encode of it with every
// pattern gives is this frame with the patterns where its empty pattern
// list is) and the position of that list's closing bracket.
func (pw *PathsWriter) frame(warnings []string) ([]byte, int, error) {
	out := jsonPaths{Algorithm: pw.algorithm, Patterns: []any{}, Warnings: warnings}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	var frame bytes.Buffer
	fe := json.NewEncoder(&frame)
	fe.SetIndent("", " ")
	if err := fe.Encode(out); err != nil {
		return nil, 0, err
	}
	const empty = "\n \"patterns\": []"
	cut := bytes.Index(frame.Bytes(), []byte(empty))
	if cut < 0 {
		return nil, 0, fmt.Errorf("render: JSON frame without its pattern list")
	}
	return frame.Bytes(), cut + len(empty) - 1, nil
}

// Pattern writes the next pattern.
func (pw *PathsWriter) Pattern(pat *trace.Pattern) error {
	if pw.err != nil {
		return pw.err
	}
	nj := &pw.nj
	if pw.n == 0 {
		// The frame up to its pattern list (the warnings come after).
		frame, cut, err := pw.frame(nil)
		if err != nil {
			pw.err = err
			return err
		}
		nj.b = append(nj.b, frame[:cut]...)
	}
	mark := len(nj.b)
	if pw.n > 0 {
		nj.b = append(nj.b, ',')
	}
	nj.b = append(nj.b, "\n  "...)
	at := len(nj.b)
	var v any
	switch pw.algorithm {
	case "convolution":
		v = convolutionPattern(pat)
	default:
		// Nesting and linking: the same bytes as encoding/json's, written
		// directly; a NaN or an infinity goes to encoding/json for its
		// error.
		nj.bad = false
		if pw.algorithm == "nesting" {
			nj.nestPattern(pat)
		} else {
			nj.linkPattern(pat)
		}
		if !nj.bad {
			pw.n++
			if len(nj.b) >= pathsFlush {
				return pw.flush()
			}
			return nil
		}
		if pw.algorithm == "nesting" {
			v = jsonNestPattern{Rank: pat.Rank, Count: pat.Count, Root: nestStep(pat.Root), Metrics: pat.Metrics}
		} else {
			v = jsonLinkPattern{Rank: pat.Rank, Count: pat.Count, Expected: pat.Expected,
				MaxProb: pat.MaxProb, Root: linkStep(pat.Root, true), Metrics: pat.Metrics}
		}
	}
	pw.one.Reset()
	if err := pw.pe.Encode(v); err != nil {
		nj.b = nj.b[:mark]
		pw.err = err
		return err
	}
	nj.b = append(nj.b[:at], bytes.TrimSuffix(pw.one.Bytes(), []byte("\n"))...)
	pw.n++
	if len(nj.b) >= pathsFlush {
		return pw.flush()
	}
	return nil
}

// Close ends the document with the warnings and flushes it.
func (pw *PathsWriter) Close(warnings []string) error {
	if pw.err != nil {
		return pw.err
	}
	frame, cut, err := pw.frame(warnings)
	if err != nil {
		return err
	}
	if pw.n == 0 {
		pw.nj.b = append(pw.nj.b, frame...)
	} else {
		pw.nj.b = append(pw.nj.b, "\n "...)
		pw.nj.b = append(pw.nj.b, frame[cut:]...)
	}
	return pw.flush()
}

// Instances writes one JSON object per instance:
// {"pattern":rank,"prob":p,"ids":[...]} with the trace's message ids, or
// "L<n>" (n = message index + 1) for messages without one. The lines are
// encoding/json's (written directly; an instance whose probability is a
// NaN or an infinity goes to encoding/json for its error), each written
// with one Write, as the encoder does.
func Instances(w io.Writer, t *trace.Trace, p *trace.Paths) error {
	bw := bufio.NewWriter(w)
	var j patternJSON
	for _, in := range p.Instances {
		j.b, j.bad = append(j.b[:0], `{"pattern":`...), false
		j.b = strconv.AppendInt(j.b, int64(in.Pattern), 10)
		j.b = append(j.b, `,"prob":`...)
		j.rounded(in.Prob)
		j.b = append(j.b, `,"ids":[`...)
		for i, mi := range in.Messages {
			if i > 0 {
				j.b = append(j.b, ',')
			}
			if id := t.Messages[mi].ID; id >= 0 { // digits: nothing to escape
				j.b = append(j.b, '"')
				j.b = strconv.AppendInt(j.b, id, 10)
				j.b = append(j.b, '"')
			} else {
				j.str(MessageID(t, int(mi)))
			}
		}
		j.b = append(j.b, "]}\n"...)
		if j.bad {
			return instanceError(in)
		}
		if _, err := bw.Write(j.b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// instanceError is encoding/json's error for an instance it cannot encode.
func instanceError(in trace.Instance) error {
	_, err := json.Marshal(struct {
		Pattern int     `json:"pattern"`
		Prob    float64 `json:"prob"`
	}{in.Pattern, round(in.Prob)})
	if err == nil {
		err = fmt.Errorf("render: instance of pattern %d not encodable", in.Pattern)
	}
	return err
}

// MessageID is the id a message is known by in outputs: its id= value, or
// "L<line>" for a message read from a text trace's line without id=, or
// "L<index+1>" for one that has neither (a trace built in memory).
func MessageID(t *trace.Trace, i int) string {
	if id := t.Messages[i].ID; id != trace.NoRef {
		return t.RefString(id)
	}
	return "L" + strconv.Itoa(i+1)
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
