package nat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// Translation is one address-translation rule as the contract's JSON shows
// it. Before is the endpoint as the sender wrote it, After as the receiver
// saw it; a port of "*" means every port of that address, kept as it was.
type Translation struct {
	Kind    string `json:"kind"` // "dnat" or "snat"
	Before  string `json:"before"`
	After   string `json:"after"`
	Proto   string `json:"proto"` // "tcp" or "udp"
	Flows   int    `json:"flows"`
	Packets int    `json:"packets"`
}

// Map is a canonicalisation map: the translations found (in packets by
// Detect, in logs by reconcile) and the warnings met while finding them.
type Map struct {
	Translations []Translation `json:"translations"`
	Warnings     []string      `json:"warnings"`

	idx map[string]string // proto+" "+endpoint → canonical endpoint; nil until needed
}

// Add records a translation, merging it with an identical rule already
// present (the larger flow and packet counts win: two sources usually saw the
// same flows).
func (m *Map) Add(t Translation) {
	m.idx = nil
	for i := range m.Translations {
		o := &m.Translations[i]
		if o.Kind == t.Kind && o.Before == t.Before && o.After == t.After && o.Proto == t.Proto {
			o.Flows = max(o.Flows, t.Flows)
			o.Packets = max(o.Packets, t.Packets)
			return
		}
	}
	m.Translations = append(m.Translations, t)
	m.sort()
}

// Merge adds every translation and warning of o.
func (m *Map) Merge(o *Map) {
	if o == nil {
		return
	}
	for _, t := range o.Translations {
		m.Add(t)
	}
	m.Warnings = append(m.Warnings, o.Warnings...)
}

func (m *Map) sort() {
	sort.SliceStable(m.Translations, func(i, j int) bool {
		a, b := m.Translations[i], m.Translations[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Proto != b.Proto {
			return a.Proto < b.Proto
		}
		if a.Before != b.Before {
			return endpointLess(a.Before, b.Before)
		}
		return endpointLess(a.After, b.After)
	})
}

// endpointLess orders endpoints by address, then numerically by port, with
// "*" first.
func endpointLess(a, b string) bool {
	ah, ap, _ := splitEndpoint(a)
	bh, bp, _ := splitEndpoint(b)
	if ah != bh {
		aa, e1 := netip.ParseAddr(ah)
		ba, e2 := netip.ParseAddr(bh)
		if e1 == nil && e2 == nil {
			return aa.Less(ba)
		}
		return ah < bh
	}
	an, _ := strconv.Atoi(ap)
	bn, _ := strconv.Atoi(bp)
	if ap == "*" {
		an = -1
	}
	if bp == "*" {
		bn = -1
	}
	return an < bn
}

// splitEndpoint splits "ip:port", "[v6]:port", "ip:*" or "[v6]:*".
func splitEndpoint(ep string) (host, port string, ok bool) {
	i := strings.LastIndexByte(ep, ':')
	if i <= 0 {
		return ep, "", false
	}
	host, port = ep[:i], ep[i+1:]
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	return host, port, true
}

func joinEndpoint(addr netip.Addr, port string) string {
	if addr.Is6() && !addr.Is4In6() {
		return "[" + addr.String() + "]:" + port
	}
	return addr.Unmap().String() + ":" + port
}

// Canonical returns the canonical name of an endpoint (ip:port or
// [v6]:port): the real server for a DNAT virtual address, the real client for
// an SNAT (masquerade) address, the endpoint itself otherwise. Rules of any
// protocol apply, exact ports before wildcards; use CanonicalProto when the
// protocol is known.
func (m *Map) Canonical(endpoint string) string {
	for _, wild := range []bool{false, true} {
		for _, proto := range []string{"tcp", "udp"} {
			if c, ok := m.lookup(proto, endpoint, wild); ok {
				return c
			}
		}
	}
	return endpoint
}

// CanonicalProto is Canonical restricted to the rules of one protocol
// ("tcp" or "udp").
func (m *Map) CanonicalProto(proto, endpoint string) string {
	for _, wild := range []bool{false, true} {
		if c, ok := m.lookup(proto, endpoint, wild); ok {
			return c
		}
	}
	return endpoint
}

// CanonicalAddrPort is CanonicalProto for a parsed endpoint.
func (m *Map) CanonicalAddrPort(proto uint8, ap netip.AddrPort) netip.AddrPort {
	if m == nil || len(m.Translations) == 0 {
		return ap
	}
	p := "tcp"
	if proto == ProtoUDP {
		p = "udp"
	}
	ep := joinEndpoint(ap.Addr(), strconv.Itoa(int(ap.Port())))
	c, ok := m.lookup(p, ep, false)
	if !ok {
		if c, ok = m.lookup(p, ep, true); !ok {
			return ap
		}
	}
	if r, err := netip.ParseAddrPort(c); err == nil {
		return r
	}
	return ap
}

// lookup finds the rule for an endpoint: one naming its port exactly, or
// with wild one for every port of its address.
func (m *Map) lookup(proto, endpoint string, wild bool) (string, bool) {
	if m == nil || len(m.Translations) == 0 {
		return "", false
	}
	if m.idx == nil {
		m.buildIndex()
	}
	host, port, ok := splitEndpoint(endpoint)
	if !ok {
		return "", false
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return "", false
	}
	if !wild {
		c, ok := m.idx[proto+" "+joinEndpoint(addr, port)]
		return c, ok
	}
	if c, ok := m.idx[proto+" "+joinEndpoint(addr, "*")]; ok {
		// A wildcard rule keeps the port.
		if h, p, _ := splitEndpoint(c); p == "*" {
			a, _ := netip.ParseAddr(h)
			return joinEndpoint(a, port), true
		}
		return c, true
	}
	return "", false
}

// buildIndex maps each translated name to its canonical one: DNAT before →
// after (the server's real address), SNAT after → before (the client's).
func (m *Map) buildIndex() {
	m.idx = make(map[string]string, len(m.Translations))
	for _, t := range m.Translations {
		from, to := t.Before, t.After
		if t.Kind == "snat" {
			from, to = t.After, t.Before
		}
		fh, fp, ok1 := splitEndpoint(from)
		th, tp, ok2 := splitEndpoint(to)
		fa, e1 := netip.ParseAddr(fh)
		ta, e2 := netip.ParseAddr(th)
		if !ok1 || !ok2 || e1 != nil || e2 != nil {
			continue
		}
		key := t.Proto + " " + joinEndpoint(fa, fp)
		if _, dup := m.idx[key]; !dup {
			m.idx[key] = joinEndpoint(ta, tp)
		}
	}
}

// Validate checks every translation's fields and names the first bad one.
func (m *Map) Validate() error {
	for i, t := range m.Translations {
		if t.Kind != "dnat" && t.Kind != "snat" {
			return fmt.Errorf("translation %d: kind %q is not dnat or snat", i, t.Kind)
		}
		if t.Proto != "tcp" && t.Proto != "udp" {
			return fmt.Errorf("translation %d: proto %q is not tcp or udp", i, t.Proto)
		}
		for _, ep := range []string{t.Before, t.After} {
			h, p, ok := splitEndpoint(ep)
			if !ok {
				return fmt.Errorf("translation %d: endpoint %q is not ip:port", i, ep)
			}
			if _, err := netip.ParseAddr(h); err != nil {
				return fmt.Errorf("translation %d: endpoint %q: %v", i, ep, err)
			}
			if n, err := strconv.Atoi(p); p != "*" && (err != nil || n < 0 || n > 65535) {
				return fmt.Errorf("translation %d: endpoint %q: bad port", i, ep)
			}
		}
		if t.Flows < 0 || t.Packets < 0 {
			return fmt.Errorf("translation %d: negative count", i)
		}
	}
	return nil
}

// ReadMap reads a map in the contract's JSON form (what WriteJSON and
// `wap5 nat --json` write). file names the input in errors.
func ReadMap(r io.Reader, file string) (*Map, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	var m Map
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("%s: offset %d: %v", file, se.Offset, err)
		case errors.As(err, &te):
			return nil, fmt.Errorf("%s: offset %d: %v", file, te.Offset, err)
		}
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	m.sort()
	return &m, nil
}

// WriteJSON writes the map as the contract's JSON, one object on one line.
func (m *Map) WriteJSON(w io.Writer) error {
	out := struct {
		Translations []Translation `json:"translations"`
		Warnings     []string      `json:"warnings"`
	}{m.Translations, m.Warnings}
	if out.Translations == nil {
		out.Translations = []Translation{}
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// WriteText writes the map for people: one rule per line.
func (m *Map) WriteText(w io.Writer) error {
	if len(m.Translations) == 0 {
		_, err := fmt.Fprintln(w, "no address translation found")
		return err
	}
	for _, t := range m.Translations {
		if _, err := fmt.Fprintf(w, "%s %s %s -> %s  (%d flows, %d packets)\n",
			t.Kind, t.Proto, t.Before, t.After, t.Flows, t.Packets); err != nil {
			return err
		}
	}
	return nil
}
