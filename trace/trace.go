package trace

import (
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Unknown marks a timestamp that was not observed (an untraced end).
const Unknown int64 = math.MinInt64

// NoRef marks an absent message id, call id or truth id.
const NoRef = -1

// NodeID indexes Trace.Nodes.
type NodeID int32

// EndpointID indexes Trace.Endpoints; 0 is the unknown endpoint "-".
type EndpointID int32

// NoEndpoint is the unknown endpoint, printed as "-".
const NoEndpoint EndpointID = 0

// Kind says whether a message is an RPC call, a return, or neither.
type Kind uint8

const (
	KindNone Kind = iota
	KindCall
	KindReturn
)

func (k Kind) String() string {
	switch k {
	case KindCall:
		return "call"
	case KindReturn:
		return "return"
	}
	return ""
}

// Message is one logical message: bytes sent by one node and received by
// another. Times are nanoseconds since the Unix epoch on the sender's and the
// receiver's own clocks (uncorrected), or Unknown. ID, Call and Truth are
// references: a non-negative number as written in the input, NoRef, a
// label (see Trace.Ref and Trace.RefString), or for ID the line of the text
// input a message without id= came from (LineRef).
type Message struct {
	Send, Recv   int64
	ID           int64
	Bytes        int64
	Src, Dst     NodeID
	SrcEP, DstEP EndpointID
	Call         int32
	Truth        int32
	Kind         Kind
	// SrcActor and DstActor are the sending and the receiving thread, in
	// their node's actor table (Trace.Actor, Trace.ActorName); NoActor when
	// unknown.
	SrcActor, DstActor ActorID
}

// Time is the message's send time, or its receive time when the sender was
// not traced.
func (m *Message) Time() int64 {
	if m.Send != Unknown {
		return m.Send
	}
	return m.Recv
}

// Node is a communicating entity: a host, a program on a host, or a process,
// depending on the granularity the trace was built at; or a peer that was not
// traced, named by its address.
type Node struct {
	Name     string
	Untraced bool
}

// Correction is a clock correction of one node relative to the reference
// node: at time t (on the node's clock) the node reads
// reference + Offset + DriftPPM·1e-6·(t − At).
type Correction struct {
	Node     NodeID
	Offset   int64   // ns at At
	DriftPPM float64 // parts per million
	At       int64   // ns, the time the offset refers to
	Error    int64   // ns, estimated error bound (0 if unknown)
	Applied  bool    // the message times of this trace already include it
}

// Trace is a message trace. Build one with New and the intern methods, or
// read one with ReadFile.
type Trace struct {
	// Messages are the trace's messages. Code that edits them in place
	// (writes a field of a message rather than replacing the slice) calls
	// MessagesEdited after, so CheckValid checks them again.
	Messages  []Message
	Nodes     []Node
	Endpoints []string // Endpoints[0] == "-"
	Labels    []string // non-numeric id, call and truth values
	// Actors is each node's actor table: Actors[n][a-1] names ActorID a of
	// node n ("PID/TID"). Nodes without actors may be missing at the end.
	Actors [][]string
	Clock  []Correction
	// Extra keeps unknown key=value text of a message, by message index.
	Extra    map[int32]string
	Warnings []string

	nodeIdx map[string]NodeID
	// epIdx, when made, indexes Endpoints[:epIndexed]; lookups first take
	// in the names appended since (NewEndpoint, direct appends).
	epIdx     map[string]EndpointID
	epIndexed int
	labelIdx  map[string]int
	// Actor name indexes by node, built on first use, and which nodes
	// ran out of actor ids (warned once).
	actorIdx  []map[string]ActorID
	actorFull []bool
	// checked records the messages a reader's decoder proved valid as it
	// read them (CheckValid's message checks, checkedMark): CheckValid
	// skips its pass over them while Messages and the tables are still
	// those it records (MessagesEdited clears it).
	checked checkedMark
}

// checkedMark identifies messages proved valid and the tables they were
// checked against: the slice (its first element and length) and the
// tables' sizes. A new or resliced Messages, or tables of other sizes, no
// longer match it; an edit in place does, and clears it (MessagesEdited).
type checkedMark struct {
	data                       *Message
	n, nodes, endpoints, label int
	actorNodes, actors         int
}

// mark is the checkedMark of t's messages and tables as they are now (the
// zero mark for a trace without messages: nothing to skip).
func (t *Trace) mark() checkedMark {
	if len(t.Messages) == 0 {
		return checkedMark{}
	}
	k := checkedMark{data: &t.Messages[0], n: len(t.Messages), nodes: len(t.Nodes),
		endpoints: len(t.Endpoints), label: len(t.Labels), actorNodes: len(t.Actors)}
	for _, a := range t.Actors {
		k.actors += len(a)
	}
	return k
}

// markChecked records that t's messages, as they are now, passed
// CheckValid's message checks (a reader whose decoder checked each one).
func (t *Trace) markChecked() { t.checked = t.mark() }

// MessagesChecked reports whether t's messages are known to pass
// CheckValid's message checks without a pass over them: a reader's
// decoder checked them, and neither they nor the tables have changed since
// (as far as the mark sees: MessagesEdited).
func (t *Trace) MessagesChecked() bool {
	return t.checked.data != nil && t.checked == t.mark()
}

// MessagesEdited tells t that its messages were edited in place (a field
// of a message written): the next CheckValid checks them all again.
// Replacing, reslicing or appending to Messages needs no call.
func (t *Trace) MessagesEdited() { t.checked = checkedMark{} }

// New returns an empty trace.
func New() *Trace {
	t := &Trace{}
	t.ensureIndex()
	return t
}

// ensureIndex builds the name indexes that interning needs. Each is built
// on first use: a trace that is only read (e.g. millions of endpoints from a
// binary file) never pays for them.
func (t *Trace) ensureIndex() {
	t.ensureNodeIndex()
	t.ensureEndpointIndex()
	t.ensureLabelIndex()
}

func (t *Trace) ensureNodeIndex() {
	if t.nodeIdx != nil {
		return
	}
	t.nodeIdx = make(map[string]NodeID, len(t.Nodes))
	for i, n := range t.Nodes {
		t.nodeIdx[n.Name] = NodeID(i)
	}
}

func (t *Trace) ensureEndpointIndex() {
	if t.epIdx != nil {
		if t.epIndexed != len(t.Endpoints) {
			t.indexEndpoints()
		}
		return
	}
	if len(t.Endpoints) == 0 {
		t.Endpoints = append(t.Endpoints, "-")
	}
	t.epIdx = make(map[string]EndpointID, len(t.Endpoints))
	t.epIndexed = 0
	t.indexEndpoints()
}

// indexEndpoints takes the endpoints not indexed yet into the index.
func (t *Trace) indexEndpoints() {
	if t.epIndexed > len(t.Endpoints) { // the table was replaced
		clear(t.epIdx)
		t.epIndexed = 0
	}
	for i := t.epIndexed; i < len(t.Endpoints); i++ {
		t.epIdx[t.Endpoints[i]] = EndpointID(i)
	}
	t.epIndexed = len(t.Endpoints)
}

func (t *Trace) ensureLabelIndex() {
	if t.labelIdx != nil {
		return
	}
	t.labelIdx = make(map[string]int, len(t.Labels))
	for i, l := range t.Labels {
		t.labelIdx[l] = i
	}
}

// Node returns the id of the named node, adding it if new.
func (t *Trace) Node(name string) NodeID {
	t.ensureNodeIndex()
	if id, ok := t.nodeIdx[name]; ok {
		return id
	}
	id := NodeID(len(t.Nodes))
	t.Nodes = append(t.Nodes, Node{Name: name})
	t.nodeIdx[name] = id
	return id
}

// LookupNode returns the id of the named node, if present.
func (t *Trace) LookupNode(name string) (NodeID, bool) {
	t.ensureNodeIndex()
	id, ok := t.nodeIdx[name]
	return id, ok
}

// NodeName returns the node's name.
func (t *Trace) NodeName(id NodeID) string {
	if id < 0 || int(id) >= len(t.Nodes) {
		return fmt.Sprintf("node#%d", id)
	}
	return t.Nodes[id].Name
}

// Endpoint returns the id of the endpoint (ip:port, [v6]:port, unix:PATH or
// "-"), adding it if new.
func (t *Trace) Endpoint(name string) EndpointID {
	t.ensureEndpointIndex()
	if id, ok := t.epIdx[name]; ok {
		return id
	}
	id := EndpointID(len(t.Endpoints))
	t.Endpoints = append(t.Endpoints, name)
	t.epIdx[name] = id
	t.epIndexed++
	return id
}

// NewEndpoint appends an endpoint name that the caller knows is not in the
// table yet (it keeps its own index of the names it made), without paying
// for the index now: the index takes it in at the next lookup by name. For
// producers of millions of names (a reconciled set's ephemeral ports).
func (t *Trace) NewEndpoint(name string) EndpointID {
	if len(t.Endpoints) == 0 {
		t.ensureEndpointIndex()
	}
	t.Endpoints = append(t.Endpoints, name)
	return EndpointID(len(t.Endpoints) - 1)
}

// EndpointName returns the endpoint's text form.
func (t *Trace) EndpointName(id EndpointID) string {
	if id < 0 || int(id) >= len(t.Endpoints) {
		return "-"
	}
	return t.Endpoints[id]
}

// lineRefBase: message ids at or below it are line references (LineRef).
// Labels (−2 − index) never reach it.
const lineRefBase = -1 << 62

// LineRef is the ID of a message read from line n (1-based) of a text trace
// that gave it no id=; RefString prints it "L<n>", the name --instances
// files use for such messages. The text writer does not write it: it names
// a place in the file read, not in the file written.
func LineRef(n int) int64 { return lineRefBase - int64(n) }

// IsLineRef says whether a message ID is a line reference.
func IsLineRef(v int64) bool { return v < lineRefBase }

// Ref converts an id, call or truth value as written in a trace to its
// stored form: a non-negative integer is kept as is; anything else becomes a
// label, stored as −2 − index. "" gives NoRef.
func (t *Trace) Ref(s string) int64 {
	if s == "" {
		return NoRef
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 && strconv.FormatInt(n, 10) == s {
		return n
	}
	t.ensureLabelIndex()
	i, ok := t.labelIdx[s]
	if !ok {
		i = len(t.Labels)
		t.Labels = append(t.Labels, s)
		t.labelIdx[s] = i
	}
	return -2 - int64(i)
}

// Ref32 is Ref for the 32-bit call and truth fields; numbers that do not fit
// become labels.
func (t *Trace) Ref32(s string) int32 {
	v := t.Ref(s)
	if v > math.MaxInt32 {
		t.ensureLabelIndex()
		i, ok := t.labelIdx[s]
		if !ok {
			i = len(t.Labels)
			t.Labels = append(t.Labels, s)
			t.labelIdx[s] = i
		}
		v = -2 - int64(i)
	}
	return int32(v)
}

// RefString is the text form of a stored reference ("" for NoRef).
func (t *Trace) RefString(v int64) string {
	switch {
	case v == NoRef:
		return ""
	case v >= 0:
		return strconv.FormatInt(v, 10)
	case IsLineRef(v):
		return "L" + strconv.FormatInt(lineRefBase-v, 10)
	}
	i := -2 - v
	if i < int64(len(t.Labels)) {
		return t.Labels[i]
	}
	return fmt.Sprintf("label#%d", i)
}

// Add appends a message.
func (t *Trace) Add(m Message) { t.Messages = append(t.Messages, m) }

// Warnf records a non-fatal warning.
func (t *Trace) Warnf(format string, a ...any) {
	t.Warnings = append(t.Warnings, fmt.Sprintf(format, a...))
}

// Sort orders messages by Time (send time, else receive time), stably, and
// keeps Extra attached to its messages.
func (t *Trace) Sort() {
	if t.sorted() {
		return
	}
	if len(t.Extra) == 0 {
		sort.SliceStable(t.Messages, func(i, j int) bool { return t.Messages[i].Time() < t.Messages[j].Time() })
		return
	}
	perm := make([]int32, len(t.Messages))
	for i := range perm {
		perm[i] = int32(i)
	}
	sort.SliceStable(perm, func(i, j int) bool { return t.Messages[perm[i]].Time() < t.Messages[perm[j]].Time() })
	msgs := make([]Message, len(t.Messages))
	extra := make(map[int32]string, len(t.Extra))
	for newI, oldI := range perm {
		msgs[newI] = t.Messages[oldI]
		if s, ok := t.Extra[oldI]; ok {
			extra[int32(newI)] = s
		}
	}
	t.Messages, t.Extra = msgs, extra
}

// sorted reports whether the messages are in time order (sort.SliceIsSorted's
// answer, in a plain loop: no call per pair, ≈ 0.03 CPU-s on 4.7M messages).
func (t *Trace) sorted() bool {
	msgs := t.Messages
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Time() < msgs[i-1].Time() {
			return false
		}
	}
	return true
}

// Correction returns the clock correction recorded for a node, if any.
func (t *Trace) Correction(n NodeID) (Correction, bool) {
	for _, c := range t.Clock {
		if c.Node == n {
			return c, true
		}
	}
	return Correction{}, false
}

// CheckValid reports the first inconsistency, naming the message or table
// entry at fault. Messages a reader's decoder checked as it read them are
// not checked again while MessagesChecked holds.
func (t *Trace) CheckValid() error {
	if err := t.checkTables(); err != nil {
		return err
	}
	if !t.MessagesChecked() {
		if err := t.checkMessages(); err != nil {
			return err
		}
	}
	return t.checkClock()
}

// checkTables is CheckValid's check of the node, endpoint and actor tables.
func (t *Trace) checkTables() error {
	if len(t.Endpoints) == 0 || t.Endpoints[0] != "-" {
		return fmt.Errorf("endpoint 0 must be %q", "-")
	}
	seen := make(map[string]int, len(t.Nodes))
	for i, n := range t.Nodes {
		if n.Name == "" {
			return fmt.Errorf("node %d has no name", i)
		}
		if j, dup := seen[n.Name]; dup {
			return fmt.Errorf("nodes %d and %d are both named %q", j, i, n.Name)
		}
		seen[n.Name] = i
	}
	return t.checkActors()
}

// checkMessages is CheckValid's check of every message against the tables.
func (t *Trace) checkMessages() error {
	for i := range t.Messages {
		if err := t.checkMessage(i, &t.Messages[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkMessage is CheckValid's check of message i, m, against the tables.
func (t *Trace) checkMessage(i int, m *Message) error {
	return t.checkMessageEPs(i, m, EndpointID(len(t.Endpoints)))
}

// checkMessageEPs is checkMessage against a table of ne endpoints.
func (t *Trace) checkMessageEPs(i int, m *Message, ne EndpointID) error {
	nn := NodeID(len(t.Nodes))
	switch {
	case m.Src < 0 || m.Src >= nn:
		return fmt.Errorf("message %d: source node %d out of range [0,%d)", i, m.Src, nn)
	case m.Dst < 0 || m.Dst >= nn:
		return fmt.Errorf("message %d: destination node %d out of range [0,%d)", i, m.Dst, nn)
	case m.SrcEP < 0 || m.SrcEP >= ne:
		return fmt.Errorf("message %d: source endpoint %d out of range [0,%d)", i, m.SrcEP, ne)
	case m.DstEP < 0 || m.DstEP >= ne:
		return fmt.Errorf("message %d: destination endpoint %d out of range [0,%d)", i, m.DstEP, ne)
	case m.Send == Unknown && m.Recv == Unknown:
		return fmt.Errorf("message %d: neither send nor receive time is known", i)
	case m.Bytes < 0:
		return fmt.Errorf("message %d: negative size %d", i, m.Bytes)
	case m.Kind > KindReturn:
		return fmt.Errorf("message %d: bad kind %d", i, m.Kind)
	case m.SrcActor != NoActor && int(m.SrcActor) > t.actorCount(m.Src):
		return fmt.Errorf("message %d: source actor %d out of range [0,%d] of node %d", i, m.SrcActor, t.actorCount(m.Src), m.Src)
	case m.DstActor != NoActor && int(m.DstActor) > t.actorCount(m.Dst):
		return fmt.Errorf("message %d: destination actor %d out of range [0,%d] of node %d", i, m.DstActor, t.actorCount(m.Dst), m.Dst)
	}
	for _, r := range [...]int64{m.ID, int64(m.Call), int64(m.Truth)} {
		if r < -1 && !IsLineRef(r) && -2-r >= int64(len(t.Labels)) {
			return fmt.Errorf("message %d: label reference %d out of range", i, r)
		}
	}
	return nil
}

func (t *Trace) checkTablesAndClock() error {
	if err := t.checkTables(); err != nil {
		return err
	}
	return t.checkClock()
}

// checkClock is CheckValid's check of the clock corrections.
func (t *Trace) checkClock() error {
	nn := NodeID(len(t.Nodes))
	for _, c := range t.Clock {
		if c.Node < 0 || c.Node >= nn {
			return fmt.Errorf("clock correction for node %d out of range [0,%d)", c.Node, nn)
		}
	}
	return nil
}

// nodeBytes is Node for a name in a byte slice; it allocates only for a new name.
func (t *Trace) nodeBytes(name []byte) NodeID {
	if id, ok := t.nodeIdx[string(name)]; ok {
		return id
	}
	return t.Node(string(name))
}

func (t *Trace) endpointBytes(name []byte) EndpointID {
	t.ensureEndpointIndex()
	if id, ok := t.epIdx[string(name)]; ok {
		return id
	}
	return t.Endpoint(string(name))
}

// canonicalCount parses a decimal integer written without sign or leading
// zeros (so that it prints back the same).
func canonicalCount(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	return parseCount(b)
}

func (t *Trace) refBytes(v []byte) int64 {
	if len(v) == 0 {
		return NoRef
	}
	if n, ok := canonicalCount(v); ok {
		return n
	}
	return t.Ref(string(v))
}

func (t *Trace) ref32Bytes(v []byte) int32 {
	if n, ok := canonicalCount(v); ok && n <= math.MaxInt32 {
		return int32(n)
	}
	if len(v) == 0 {
		return NoRef
	}
	return t.Ref32(string(v))
}
