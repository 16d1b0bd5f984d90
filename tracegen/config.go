package tracegen

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// Config is a parsed generator configuration (see docs/gen.md for the file
// format). The CLI's overrides change its fields before Generate or Write.
type Config struct {
	File     string
	Seed     uint64
	Start    float64 // true time 0, seconds since the Unix epoch
	Duration float64 // seconds of true time during which instances start; 0 = no limit
	Messages int64   // stop starting instances once this many messages were made; 0 = no limit
	Loss     float64 // independent probability that a message is missing from the trace
	Sniffer  *Sniffer
	StdScale float64 // multiplies the spread of node (step) delays; 1 = as configured
	Parents  bool    // write parent=ID: the message that caused each message
	// Conns is how calls use connections (the `connections` line): each
	// node keeps a pool of persistent connections per callee, reused across
	// calls (one call at a time per connection), from random ephemeral ports.
	Conns     Conns
	Nodes     []*Node
	Groups    map[string][]int // group (and node) name → node indices
	Links     []*Link
	Tracelets []*Tracelet
}

// Conns configures the connection pools: a connection stays open until it
// has been idle for Idle seconds or has carried Uses calls (Uses = 1: a new
// connection, from a random ephemeral port, for every call).
type Conns struct {
	Idle float64 // seconds; 0 = the default (5 s)
	Uses int     // 0 = the default (100)
}

// Default connection pool settings.
const (
	DefaultConnIdle = 5.0
	DefaultConnUses = 100
)

// Sniffer models bursty capture loss (Project 5 §7.5.5): a capture point
// with a peak rate (messages per second) and a finite queue; a message that
// arrives at a full queue is lost.
type Sniffer struct {
	Rate  float64
	Queue int
}

// Node is one generated node.
type Node struct {
	Name     string
	Group    string // the node line's name (equal to Name unless count > 1)
	IP       netip.Addr
	Port     int     // listening port (servers)
	Client   bool    // uses ephemeral ports only
	Untraced bool    // its own timestamps are unknown (-)
	Offset   float64 // clock offset, seconds (node clock = true time + offset + drift·t)
	DriftPPM float64
	Region   string
	Line     int
}

// Link gives the one-way network delay between two sets of nodes, one
// direction. From and To are a node name, a group name, "@region" or "*".
type Link struct {
	From, To string
	Delay    Dist
	Line     int
}

// Op is what a step does.
type Op uint8

const (
	OpCall Op = iota // RPC: a call message, the callee's steps, a return
	OpSend           // one-way message; the receiver runs the nested steps
	OpPar            // the nested steps start together; the next step waits for all
)

// Step is one message template of a tracelet.
type Step struct {
	Op       Op
	To       Target
	Wait     Dist            // delay in the sender before sending (after its last event on this path)
	WaitAt   map[string]Dist // Wait for a particular sender node
	Reply    Dist            // callee's delay before sending the return (after its last child)
	ReplyAt  map[string]Dist // Reply for a particular callee
	Prob     float64         // probability that the step (and its subtree) happens
	Bytes    Dist
	RBytes   Dist
	Children []*Step
	Line     int
}

// Target is a set of nodes one of which receives a message.
type Target struct {
	Text    string
	Choices []int     // node indices
	Weights []float64 // cumulative, same length
	Same    bool      // restrict to nodes in the sender's region (if any)
}

// Tracelet is a template of one causal path, run by Parallel workers in a
// loop with Think time between the end of one instance and the start of the
// next (Project 5 §7.1.1).
type Tracelet struct {
	Name     string
	From     Target
	Think    Dist
	Parallel int
	Steps    []*Step
	Line     int
}

// ParseConfigFile reads a configuration file.
func ParseConfigFile(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseConfig(f, path)
}

type parser struct {
	cfg       *Config
	file      string
	line      int
	links     []rawLink
	steps     []rawStep // tracelet steps, resolved after all nodes are known
	tl        *Tracelet
	stack     []stackEntry
	nodeLines int
}

type rawLink struct {
	from, to string
	delay    Dist
	line     int
}

type rawStep struct {
	step   *Step
	target string
	atKeys map[string]int // node names used in wait@/reply@, for checking
}

type stackEntry struct {
	indent int
	step   *Step
}

// ParseConfig reads a configuration; file names it in errors, which carry
// file:line.
func ParseConfig(r io.Reader, file string) (*Config, error) {
	p := &parser{cfg: &Config{File: file, Seed: 1, Start: 1700000000, StdScale: 1, Groups: map[string][]int{}}, file: file}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		p.line++
		raw := sc.Text()
		if i := strings.IndexByte(raw, '#'); i >= 0 {
			raw = raw[:i]
		}
		if strings.TrimSpace(raw) == "" {
			continue
		}
		if err := p.parseLine(raw); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, p.line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", file, p.line+1, err)
	}
	if err := p.finish(); err != nil {
		return nil, err
	}
	return p.cfg, nil
}

func indentOf(s string) int {
	n := 0
	for _, c := range s {
		switch c {
		case ' ':
			n++
		case '\t':
			n = (n/8 + 1) * 8
		default:
			return n
		}
	}
	return n
}

func (p *parser) parseLine(raw string) error {
	indent := indentOf(raw)
	f := strings.Fields(raw)
	kw, args := f[0], f[1:]
	if indent > 0 {
		if p.tl == nil {
			return fmt.Errorf("indented %q outside a tracelet", kw)
		}
		return p.parseStep(indent, kw, args)
	}
	p.tl, p.stack = nil, nil
	one := func() (string, error) {
		if len(args) != 1 {
			return "", fmt.Errorf("%s takes one value, got %d", kw, len(args))
		}
		return args[0], nil
	}
	c := p.cfg
	switch kw {
	case "seed":
		v, err := one()
		if err != nil {
			return err
		}
		if c.Seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			return fmt.Errorf("seed: bad number %q", v)
		}
	case "start":
		v, err := one()
		if err != nil {
			return err
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x < 0 || x > 9e9 {
			return fmt.Errorf("start: want epoch seconds, got %q", v)
		}
		c.Start = x
	case "duration":
		v, err := one()
		if err != nil {
			return err
		}
		if c.Duration, err = parseSeconds(v); err != nil {
			return err
		}
	case "messages":
		v, err := one()
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("messages: bad count %q", v)
		}
		c.Messages = n
	case "loss":
		v, err := one()
		if err != nil {
			return err
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x >= 0 && x <= 1) {
			return fmt.Errorf("loss: want a probability in [0,1], got %q", v)
		}
		c.Loss = x
	case "stddev-scale":
		v, err := one()
		if err != nil {
			return err
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("stddev-scale: bad factor %q", v)
		}
		c.StdScale = x
	case "sniffer":
		s := &Sniffer{}
		for _, kv := range args {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "rate":
				x, err := strconv.ParseFloat(v, 64)
				if err != nil || !(x > 0) || math.IsInf(x, 0) {
					return fmt.Errorf("sniffer rate: want messages per second > 0, got %q", v)
				}
				s.Rate = x
			case "queue":
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > 1<<24 {
					return fmt.Errorf("sniffer queue: want a length ≥ 1, got %q", v)
				}
				s.Queue = n
			default:
				return fmt.Errorf("sniffer: unknown key %q (want rate=, queue=)", k)
			}
		}
		if s.Rate == 0 || s.Queue == 0 {
			return fmt.Errorf("sniffer needs rate= and queue=")
		}
		c.Sniffer = s
	case "connections":
		for _, kv := range args {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "idle":
				x, err := parseSeconds(v)
				if err != nil || !(x > 0) {
					return fmt.Errorf("connections idle: want a duration > 0, got %q", v)
				}
				c.Conns.Idle = x
			case "uses":
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					return fmt.Errorf("connections uses: want a count ≥ 1, got %q", v)
				}
				c.Conns.Uses = n
			default:
				return fmt.Errorf("connections: unknown key %q (want idle=, uses=)", k)
			}
		}
	case "parents":
		if len(args) != 0 {
			return fmt.Errorf("parents takes no value")
		}
		c.Parents = true
	case "node":
		return p.parseNode(args)
	case "link":
		return p.parseLink(args)
	case "tracelet":
		return p.parseTracelet(args)
	default:
		return fmt.Errorf("unknown keyword %q (want seed, start, duration, messages, loss, sniffer, stddev-scale, connections, parents, node, link or tracelet)", kw)
	}
	return nil
}

func validName(s string) bool {
	if s == "" || s == "-" || s == "*" || strings.ContainsAny(s, "|@=(),#") {
		return false
	}
	for _, r := range s {
		if r <= ' ' {
			return false
		}
	}
	return true
}

func (p *parser) parseNode(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("node needs a name")
	}
	name := args[0]
	if !validName(name) {
		return fmt.Errorf("bad node name %q", name)
	}
	if _, dup := p.cfg.Groups[name]; dup {
		return fmt.Errorf("node %q declared twice", name)
	}
	proto := Node{Name: name, Group: name, Line: p.line}
	count := 1
	byAddr := false
	var offset, drift [2]float64
	var regions []string
	var ip netip.Addr
	for _, kv := range args[1:] {
		k, v, hasV := strings.Cut(kv, "=")
		var err error
		switch k {
		case "untraced":
			proto.Untraced = !hasV || v == "1" || v == "true"
		case "client":
			proto.Client = !hasV || v == "1" || v == "true"
		case "byaddr":
			byAddr = !hasV || v == "1" || v == "true"
		case "count":
			count, err = strconv.Atoi(v)
			if err != nil || count < 1 || count > 1_000_000 {
				return fmt.Errorf("count: want 1..1000000, got %q", v)
			}
		case "ip":
			ip, err = netip.ParseAddr(v)
			if err != nil {
				return fmt.Errorf("ip: %v", err)
			}
		case "port":
			proto.Port, err = strconv.Atoi(v)
			if err != nil || proto.Port < 1 || proto.Port > 65535 {
				return fmt.Errorf("port: want 1..65535, got %q", v)
			}
		case "offset":
			if offset, err = parseUniform(v, parseSigned); err != nil {
				return fmt.Errorf("offset: %v", err)
			}
		case "drift":
			drift, err = parseUniform(strings.TrimSuffix(v, "ppm"), parsePPM)
			if err != nil {
				return fmt.Errorf("drift: %v", err)
			}
		case "region":
			regions = strings.Split(v, ",")
			for _, r := range regions {
				if !validName(r) {
					return fmt.Errorf("bad region %q", r)
				}
			}
		default:
			return fmt.Errorf("node: unknown key %q (want untraced, client, byaddr, count=, ip=, port=, offset=, drift=, region=)", k)
		}
	}
	if proto.Port == 0 {
		proto.Port = 80
	}
	if !ip.IsValid() {
		// 10.G.0.1 onwards: one /16 per node line.
		p.nodeLines++
		ip = netip.AddrFrom4([4]byte{10, byte(p.nodeLines % 256), 0, 1})
	}
	var idx []int
	clockRand := rand.New(rand.NewPCG(uint64(p.line), 0x5eed))
	for i := 0; i < count; i++ {
		n := proto
		switch {
		case byAddr:
			n.Name = ip.String()
		case count > 1:
			n.Name = fmt.Sprintf("%s%d", name, i+1)
		}
		if _, dup := p.cfg.Groups[n.Name]; dup && n.Name != name {
			return fmt.Errorf("node %q (member %d of %s) declared twice", n.Name, i+1, name)
		}
		n.IP = ip
		ip = ip.Next()
		// Clock offsets and drifts drawn from a range are fixed by the file
		// (a generator seeded by the line), not by the seed of the run.
		n.Offset = offset[0] + (offset[1]-offset[0])*clockRand.Float64()
		n.DriftPPM = drift[0] + (drift[1]-drift[0])*clockRand.Float64()
		if len(regions) > 0 {
			n.Region = regions[i%len(regions)]
		}
		idx = append(idx, len(p.cfg.Nodes))
		p.cfg.Groups[n.Name] = []int{len(p.cfg.Nodes)}
		p.cfg.Nodes = append(p.cfg.Nodes, &n)
	}
	p.cfg.Groups[name] = idx
	return nil
}

func (p *parser) parseLink(args []string) error {
	if len(args) < 3 {
		return fmt.Errorf("link wants FROM TO delay=DIST [back=DIST]")
	}
	l := rawLink{from: args[0], to: args[1], line: p.line}
	var back *Dist
	hasDelay := false
	for _, kv := range args[2:] {
		k, v, _ := strings.Cut(kv, "=")
		d, err := parseDist(v, true)
		if err != nil {
			return fmt.Errorf("%s: %v", k, err)
		}
		switch k {
		case "delay":
			l.delay, hasDelay = d, true
		case "back":
			back = &d
		default:
			return fmt.Errorf("link: unknown key %q (want delay=, back=)", k)
		}
	}
	if !hasDelay {
		return fmt.Errorf("link needs delay=")
	}
	p.links = append(p.links, l)
	rev := rawLink{from: l.to, to: l.from, delay: l.delay, line: p.line}
	if back != nil {
		rev.delay = *back
	}
	p.links = append(p.links, rev)
	return nil
}

func (p *parser) parseTracelet(args []string) error {
	if len(args) == 0 || !validName(args[0]) {
		return fmt.Errorf("tracelet needs a name")
	}
	for _, t := range p.cfg.Tracelets {
		if t.Name == args[0] {
			return fmt.Errorf("tracelet %q declared twice (first at line %d)", t.Name, t.Line)
		}
	}
	t := &Tracelet{Name: args[0], Parallel: 1, Line: p.line, Think: Dist{Kind: Const}}
	var from string
	for _, kv := range args[1:] {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "from":
			from = v
		case "think":
			if t.Think, err = parseDist(v, true); err != nil {
				return fmt.Errorf("think: %v", err)
			}
		case "parallel":
			t.Parallel, err = strconv.Atoi(v)
			if err != nil || t.Parallel < 0 || t.Parallel > 1_000_000 {
				return fmt.Errorf("parallel: want 0..1000000, got %q", v)
			}
		default:
			return fmt.Errorf("tracelet: unknown key %q (want from=, think=, parallel=)", k)
		}
	}
	if from == "" {
		return fmt.Errorf("tracelet %s needs from=NODE (the node that starts each instance)", t.Name)
	}
	tg, err := p.target(from)
	if err != nil {
		return err
	}
	t.From = tg
	p.cfg.Tracelets = append(p.cfg.Tracelets, t)
	p.tl = t
	return nil
}

func (p *parser) parseStep(indent int, kw string, args []string) error {
	s := &Step{Line: p.line, Prob: 1}
	switch kw {
	case "call":
		s.Op = OpCall
		s.Bytes, s.RBytes = Dist{Kind: Const, A: 200}, Dist{Kind: Const, A: 1000}
	case "send":
		s.Op = OpSend
		s.Bytes = Dist{Kind: Const, A: 500}
	case "par":
		s.Op = OpPar
	default:
		return fmt.Errorf("unknown step %q (want call, send or par)", kw)
	}
	rs := rawStep{step: s}
	if s.Op != OpPar {
		if len(args) == 0 || strings.Contains(args[0], "=") {
			return fmt.Errorf("%s needs a target node", kw)
		}
		rs.target, args = args[0], args[1:]
	}
	for _, kv := range args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%q is not key=value", kv)
		}
		key, at, hasAt := strings.Cut(k, "@")
		var err error
		switch {
		case key == "wait" || key == "reply":
			if s.Op == OpPar || (key == "reply" && s.Op != OpCall) {
				return fmt.Errorf("%s does not take %s=", kw, key)
			}
			d, err := parseDist(v, true)
			if err != nil {
				return fmt.Errorf("%s: %v", k, err)
			}
			switch {
			case !hasAt && key == "wait":
				s.Wait = d
			case !hasAt:
				s.Reply = d
			case key == "wait":
				if s.WaitAt == nil {
					s.WaitAt = map[string]Dist{}
				}
				s.WaitAt[at] = d
			default:
				if s.ReplyAt == nil {
					s.ReplyAt = map[string]Dist{}
				}
				s.ReplyAt[at] = d
			}
			if hasAt {
				if rs.atKeys == nil {
					rs.atKeys = map[string]int{}
				}
				rs.atKeys[at]++
			}
		case k == "prob":
			s.Prob, err = strconv.ParseFloat(v, 64)
			if err != nil || !(s.Prob >= 0 && s.Prob <= 1) {
				return fmt.Errorf("prob: want a probability in [0,1], got %q", v)
			}
		case k == "bytes" || k == "rbytes":
			if s.Op == OpPar || (k == "rbytes" && s.Op != OpCall) {
				return fmt.Errorf("%s does not take %s=", kw, k)
			}
			d, err := parseDist(v, false)
			if err != nil {
				return fmt.Errorf("%s: %v", k, err)
			}
			if k == "bytes" {
				s.Bytes = d
			} else {
				s.RBytes = d
			}
		default:
			return fmt.Errorf("%s: unknown key %q (want wait=, wait@NODE=, reply=, reply@NODE=, prob=, bytes=, rbytes=)", kw, k)
		}
	}
	// Nesting by indentation: pop steps indented as deep or deeper.
	for len(p.stack) > 0 && p.stack[len(p.stack)-1].indent >= indent {
		p.stack = p.stack[:len(p.stack)-1]
	}
	if len(p.stack) == 0 {
		p.tl.Steps = append(p.tl.Steps, s)
	} else {
		parent := p.stack[len(p.stack)-1].step
		parent.Children = append(parent.Children, s)
	}
	p.stack = append(p.stack, stackEntry{indent, s})
	p.steps = append(p.steps, rs)
	return nil
}

// target parses "A", "A|B", "A:3|B:1" (weights) and "GROUP@same" (only
// members in the sender's region).
func (p *parser) target(s string) (Target, error) {
	t := Target{Text: s}
	body := s
	if b, ok := strings.CutSuffix(s, "@same"); ok {
		body, t.Same = b, true
	}
	sum := 0.0
	for _, alt := range strings.Split(body, "|") {
		name, ws, hasW := strings.Cut(alt, ":")
		w := 1.0
		if hasW {
			var err error
			w, err = strconv.ParseFloat(ws, 64)
			if err != nil || !(w > 0) || math.IsInf(w, 0) {
				return t, fmt.Errorf("target %q: bad weight %q", s, ws)
			}
		}
		members, ok := p.cfg.Groups[name]
		if !ok {
			return t, fmt.Errorf("target %q: no node or group %q (declare nodes before tracelets)", s, name)
		}
		for _, m := range members {
			sum += w / float64(len(members))
			t.Choices = append(t.Choices, m)
			t.Weights = append(t.Weights, sum)
		}
	}
	return t, nil
}

func (p *parser) finish() error {
	c := p.cfg
	for _, rs := range p.steps {
		if rs.step.Op == OpPar {
			if len(rs.step.Children) == 0 {
				return fmt.Errorf("%s:%d: par without nested steps", p.file, rs.step.Line)
			}
			continue
		}
		t, err := p.target(rs.target)
		if err != nil {
			return fmt.Errorf("%s:%d: %v", p.file, rs.step.Line, err)
		}
		rs.step.To = t
		for name := range rs.atKeys {
			if _, ok := c.Groups[name]; !ok {
				return fmt.Errorf("%s:%d: wait@/reply@ names unknown node %q", p.file, rs.step.Line, name)
			}
		}
		// Expand group names in wait@/reply@ to members.
		rs.step.WaitAt = expandAt(c, rs.step.WaitAt)
		rs.step.ReplyAt = expandAt(c, rs.step.ReplyAt)
	}
	for _, l := range p.links {
		for _, end := range []string{l.from, l.to} {
			if end == "*" {
				continue
			}
			if r, ok := strings.CutPrefix(end, "@"); ok {
				found := false
				for _, n := range c.Nodes {
					found = found || n.Region == r
				}
				if !found {
					return fmt.Errorf("%s:%d: link: no node in region %q", p.file, l.line, r)
				}
				continue
			}
			if _, ok := c.Groups[end]; !ok {
				return fmt.Errorf("%s:%d: link: no node or group %q", p.file, l.line, end)
			}
		}
		c.Links = append(c.Links, &Link{From: l.from, To: l.to, Delay: l.delay, Line: l.line})
	}
	if len(c.Nodes) == 0 {
		return fmt.Errorf("%s: no nodes", p.file)
	}
	if len(c.Tracelets) == 0 {
		return fmt.Errorf("%s: no tracelets", p.file)
	}
	for _, t := range c.Tracelets {
		if len(t.Steps) == 0 {
			return fmt.Errorf("%s:%d: tracelet %s has no steps", p.file, t.Line, t.Name)
		}
	}
	return nil
}

// expandAt keys a per-node override by node name, expanding groups; a
// member's own entry wins over its group's.
func expandAt(c *Config, m map[string]Dist) map[string]Dist {
	if m == nil {
		return nil
	}
	out := map[string]Dist{}
	for name, d := range m {
		for _, i := range c.Groups[name] {
			if _, own := m[c.Nodes[i].Name]; own && c.Nodes[i].Name != name {
				continue
			}
			out[c.Nodes[i].Name] = d
		}
	}
	return out
}

// ParseSeconds parses a non-negative duration such as "5ms", "1.5s", "10m"
// (a bare number is seconds).
func ParseSeconds(s string) (float64, error) { return parseSeconds(s) }

// ParseSignedSeconds is ParseSeconds allowing a sign (clock offsets).
func ParseSignedSeconds(s string) (float64, error) { return parseSigned(s) }

// SetClock sets the clock offset (seconds) and/or drift (ppm) of a node or
// of every member of a group.
func (c *Config) SetClock(name string, offset, driftPPM *float64) error {
	members, ok := c.Groups[name]
	if !ok {
		return fmt.Errorf("no node or group %q", name)
	}
	for _, i := range members {
		if offset != nil {
			c.Nodes[i].Offset = *offset
		}
		if driftPPM != nil {
			c.Nodes[i].DriftPPM = *driftPPM
		}
	}
	return nil
}

// parseUniform parses a value or "uniform(lo,hi)" into a range.
func parseUniform(s string, val func(string) (float64, error)) ([2]float64, error) {
	if args, ok := strings.CutPrefix(s, "uniform("); ok {
		lo, hi, ok := strings.Cut(strings.TrimSuffix(args, ")"), ",")
		if !ok || !strings.HasSuffix(args, ")") {
			return [2]float64{}, fmt.Errorf("want uniform(LO,HI), got %q", s)
		}
		a, err := val(strings.TrimSpace(lo))
		if err != nil {
			return [2]float64{}, err
		}
		b, err := val(strings.TrimSpace(hi))
		if err != nil {
			return [2]float64{}, err
		}
		if b < a {
			return [2]float64{}, fmt.Errorf("uniform(%s): upper bound below lower bound", args)
		}
		return [2]float64{a, b}, nil
	}
	x, err := val(s)
	return [2]float64{x, x}, err
}

func parsePPM(s string) (float64, error) {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.Abs(x) > 1e5 {
		return 0, fmt.Errorf("want parts per million (|drift| ≤ 100000), got %q", s)
	}
	return x, nil
}
