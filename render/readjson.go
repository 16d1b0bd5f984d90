package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"wap5/trace"
)

// ReadJSON reads the contract's result JSON (`wap5 link/nest/convolve
// --json`, as JSON writes it) back into paths. Means come back as Stats with
// the step's count as weight; standard deviations, minima, maxima and
// histograms where the JSON has them. Errors name the byte offset.
func ReadJSON(r io.Reader) (*trace.Paths, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var top struct {
		Algorithm string            `json:"algorithm"`
		Patterns  []json.RawMessage `json:"patterns"`
		Warnings  []string          `json:"warnings"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, jsonErr(data, err)
	}
	switch top.Algorithm {
	case "linking", "nesting", "convolution":
	case "":
		return nil, fmt.Errorf("result JSON has no \"algorithm\" (want linking, nesting or convolution)")
	default:
		return nil, fmt.Errorf("result JSON: unknown algorithm %q", top.Algorithm)
	}
	p := &trace.Paths{Algorithm: top.Algorithm, Warnings: top.Warnings}
	for i, raw := range top.Patterns {
		pat, err := readPattern(top.Algorithm, raw)
		if err != nil {
			return nil, fmt.Errorf("result JSON: pattern %d: %v", i+1, err)
		}
		if pat.Rank == 0 {
			pat.Rank = i + 1
		}
		p.Patterns = append(p.Patterns, pat)
	}
	return p, nil
}

func jsonErr(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("result JSON: offset %d (line %d): %v", se.Offset, 1+bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n")), err)
	case errors.As(err, &te):
		return fmt.Errorf("result JSON: offset %d (line %d): %s: want %s, got %s", te.Offset,
			1+bytes.Count(data[:min(int(te.Offset), len(data))], []byte("\n")), te.Field, te.Type, te.Value)
	}
	return fmt.Errorf("result JSON: %v", err)
}

type readStep struct {
	From       string      `json:"from"`
	To         string      `json:"to"`
	Count      int         `json:"count"`
	Net        *float64    `json:"net_s"`
	Wait       *float64    `json:"wait_s"`
	NetStd     *float64    `json:"net_std_s"`
	WaitStd    *float64    `json:"wait_std_s"`
	CallDelay  *float64    `json:"call_delay_s"`
	Latency    *float64    `json:"latency_s"`
	CallDelayD *jsonDist   `json:"call_delay"`
	LatencyD   *jsonDist   `json:"latency"`
	Children   []*readStep `json:"children"`
}

type readPat struct {
	Rank     int                `json:"rank"`
	Count    int                `json:"count"`
	Expected *float64           `json:"expected"`
	MaxProb  *float64           `json:"max_prob"`
	Metrics  map[string]float64 `json:"metrics"`
	Root     *readStep          `json:"root"`
	Nodes    []string           `json:"nodes"`
	Edges    []jsonConvEdge     `json:"edges"`
}

func readPattern(alg string, raw json.RawMessage) (*trace.Pattern, error) {
	var rp readPat
	if err := json.Unmarshal(raw, &rp); err != nil {
		return nil, err
	}
	pat := &trace.Pattern{Rank: rp.Rank, Count: rp.Count, Expected: float64(rp.Count), MaxProb: 1, Metrics: rp.Metrics}
	if rp.Expected != nil {
		pat.Expected = *rp.Expected
	}
	if rp.MaxProb != nil {
		pat.MaxProb = *rp.MaxProb
	}
	if alg == "convolution" {
		if len(rp.Nodes) < 2 || len(rp.Edges) != len(rp.Nodes)-1 {
			return nil, fmt.Errorf("a chain of %d nodes needs %d edges, got %d", len(rp.Nodes), max(len(rp.Nodes)-1, 1), len(rp.Edges))
		}
		var prev *trace.Step
		for i, e := range rp.Edges {
			st := &trace.Step{From: rp.Nodes[i], To: rp.Nodes[i+1], Count: e.Count, Delays: e.Delays}
			if st.Delays == nil {
				st.Delays = []float64{}
			}
			if prev == nil {
				pat.Root = st
			} else {
				prev.Children = []*trace.Step{st}
			}
			prev = st
		}
		return pat, nil
	}
	if rp.Root == nil {
		return nil, fmt.Errorf("no root")
	}
	var conv func(s *readStep, depth int) (*trace.Step, error)
	conv = func(s *readStep, depth int) (*trace.Step, error) {
		if s == nil || s.From == "" || s.To == "" {
			return nil, fmt.Errorf("a step without from/to")
		}
		if depth > 10000 {
			return nil, fmt.Errorf("steps nested deeper than 10000")
		}
		st := &trace.Step{From: s.From, To: s.To, Count: s.Count}
		w := float64(max(s.Count, 1))
		if alg == "nesting" {
			st.Kind = trace.KindCall
			st.Wait = stats(s.CallDelay, nil, s.CallDelayD, w)
			st.Latency = stats(s.Latency, nil, s.LatencyD, w)
		} else {
			st.Net = stats(s.Net, s.NetStd, nil, w)
			st.Wait = stats(s.Wait, s.WaitStd, nil, w)
		}
		for _, c := range s.Children {
			cs, err := conv(c, depth+1)
			if err != nil {
				return nil, err
			}
			st.Children = append(st.Children, cs)
		}
		return st, nil
	}
	root, err := conv(rp.Root, 0)
	if err != nil {
		return nil, err
	}
	pat.Root = root
	return pat, nil
}

func stats(mean, std *float64, d *jsonDist, w float64) trace.Stats {
	if mean == nil {
		return trace.Stats{}
	}
	s := trace.Stats{W: w, Mean: *mean, Min: *mean, Max: *mean}
	if std != nil {
		s.Std = *std
	}
	if d != nil {
		s.Std, s.Min, s.Max = d.Std, d.Min, d.Max
		if d.Hist != nil && d.Hist.Ratio > 1 && d.Hist.Lo > 0 {
			h := &trace.Histogram{Lo: d.Hist.Lo, Ratio: d.Hist.Ratio, Counts: d.Hist.Counts}
			s.Hist = h
		}
	}
	return s
}

// ReadInstances reads `--instances` lines ({"pattern":rank,"prob":p,
// "ids":[...]}) and resolves the ids against t: a message's id= value, or
// "L<n>" for message n (1-based) of a trace without ids. Ids that name no
// message of t are warnings (the instance is kept without them); malformed
// lines are errors naming the line.
func ReadInstances(r io.Reader, t *trace.Trace) ([]trace.Instance, []string, error) {
	byID := make(map[string]int32, len(t.Messages))
	for i := range t.Messages {
		if id := t.Messages[i].ID; id != trace.NoRef {
			byID[t.RefString(id)] = int32(i)
		}
	}
	var out []trace.Instance
	var warnings []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		var in struct {
			Pattern *int     `json:"pattern"`
			Prob    *float64 `json:"prob"`
			IDs     []string `json:"ids"`
		}
		if err := json.Unmarshal([]byte(s), &in); err != nil {
			return out, warnings, fmt.Errorf("line %d: %v", line, err)
		}
		if in.Pattern == nil || in.IDs == nil {
			return out, warnings, fmt.Errorf("line %d: want {\"pattern\":rank,\"prob\":p,\"ids\":[...]}", line)
		}
		inst := trace.Instance{Pattern: *in.Pattern, Prob: 1, Messages: make([]int32, 0, len(in.IDs))}
		if in.Prob != nil {
			inst.Prob = *in.Prob
		}
		for _, id := range in.IDs {
			i, ok := byID[id]
			if !ok {
				if n, err := strconv.Atoi(strings.TrimPrefix(id, "L")); err == nil && strings.HasPrefix(id, "L") && n >= 1 && n <= len(t.Messages) {
					i, ok = int32(n-1), true
				}
			}
			if !ok {
				if len(warnings) < 100 {
					warnings = append(warnings, fmt.Sprintf("line %d: id %q names no message of the trace", line, id))
				}
				continue
			}
			inst.Messages = append(inst.Messages, i)
		}
		out = append(out, inst)
	}
	if err := sc.Err(); err != nil {
		return out, warnings, fmt.Errorf("line %d: %v", line+1, err)
	}
	return out, warnings, nil
}
