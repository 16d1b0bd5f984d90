package nat

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

const sampleJSON = `{"translations":[
 {"kind":"dnat","before":"10.0.1.100:80","after":"10.0.2.2:8080","proto":"tcp","flows":3,"packets":40},
 {"kind":"snat","before":"10.0.1.2:*","after":"10.0.2.1:*","proto":"tcp","flows":3,"packets":40},
 {"kind":"snat","before":"10.0.1.3:5000","after":"10.0.2.1:61000","proto":"udp","flows":1,"packets":5},
 {"kind":"dnat","before":"[fd00::100]:*","after":"[fd00::2]:*","proto":"tcp","flows":2,"packets":9}],
 "warnings":["a warning"]}`

func TestCanonical(t *testing.T) {
	m, err := ReadMap(strings.NewReader(sampleJSON), "map.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ proto, in, want string }{
		{"tcp", "10.0.1.100:80", "10.0.2.2:8080"},   // DNAT: the virtual address is the server
		{"tcp", "10.0.1.100:81", "10.0.1.100:81"},   // another port is not translated
		{"tcp", "10.0.2.1:41234", "10.0.1.2:41234"}, // SNAT keeping ports: the client
		{"udp", "10.0.2.1:61000", "10.0.1.3:5000"},  // SNAT rewriting one port
		{"udp", "10.0.2.1:41234", "10.0.2.1:41234"}, // the tcp rule does not apply to udp
		{"tcp", "10.0.2.2:8080", "10.0.2.2:8080"},   // real addresses stay
		{"tcp", "[fd00::100]:443", "[fd00::2]:443"},
		{"tcp", "unix:/tmp/x", "unix:/tmp/x"},
		{"tcp", "-", "-"},
	}
	for _, tc := range tests {
		if got := m.CanonicalProto(tc.proto, tc.in); got != tc.want {
			t.Errorf("CanonicalProto(%s, %s) = %s, want %s", tc.proto, tc.in, got, tc.want)
		}
	}
	if got := m.Canonical("10.0.2.1:61000"); got != "10.0.1.3:5000" {
		t.Errorf("Canonical over all protocols: %s", got)
	}
	var nilMap *Map
	if nilMap.CanonicalProto("tcp", "1.2.3.4:5") != "1.2.3.4:5" {
		t.Error("nil map changes endpoints")
	}
}

func TestMapRoundTripAndMerge(t *testing.T) {
	m, err := ReadMap(strings.NewReader(sampleJSON), "map.json")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := m.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	m2, err := ReadMap(&b, "again")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(m.Translations) != fmt.Sprint(m2.Translations) {
		t.Errorf("round trip:\n%v\n%v", m.Translations, m2.Translations)
	}
	logs := &Map{}
	logs.Add(Translation{"dnat", "10.0.1.100:80", "10.0.2.2:8080", "tcp", 5, 10})
	logs.Add(Translation{"dnat", "10.0.1.101:80", "10.0.2.3:8080", "tcp", 1, 2})
	m.Merge(logs)
	if len(m.Translations) != 5 {
		t.Fatalf("merged %d translations, want 5: %v", len(m.Translations), m.Translations)
	}
	for _, tr := range m.Translations {
		if tr.Before == "10.0.1.100:80" && (tr.Flows != 5 || tr.Packets != 40) {
			t.Errorf("merged counts %+v, want the larger of each", tr)
		}
	}
	if m.CanonicalProto("tcp", "10.0.1.101:80") != "10.0.2.3:8080" {
		t.Error("merged rule not applied")
	}
	var empty bytes.Buffer
	(&Map{}).WriteJSON(&empty)
	if strings.TrimSpace(empty.String()) != `{"translations":[],"warnings":[]}` {
		t.Errorf("empty map %s", empty.String())
	}
}

func TestReadMapErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"translations":[{"kind":"nat"`, "m.json: unexpected EOF"},
		{`{"translations":[}`, "m.json: offset 18: invalid character"},
		{`{"translations":[{"kind":"xnat","before":"1.2.3.4:1","after":"1.2.3.5:1","proto":"tcp"}]}`, `translation 0: kind "xnat"`},
		{`{"translations":[{"kind":"dnat","before":"1.2.3.4","after":"1.2.3.5:1","proto":"tcp"}]}`, `translation 0: endpoint "1.2.3.4"`},
		{`{"translations":[{"kind":"dnat","before":"1.2.3.4:99999","after":"1.2.3.5:1","proto":"tcp"}]}`, `bad port`},
		{`{"translations":[{"kind":"dnat","before":"1.2.3.4:9","after":"1.2.3.5:1","proto":"sctp"}]}`, `proto "sctp"`},
		{`{"translations":5}`, "m.json: offset 17: json: cannot unmarshal number"},
	}
	for _, tc := range tests {
		_, err := ReadMap(strings.NewReader(tc.in), "m.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "m.json: ") {
			t.Errorf("ReadMap(%s): %v, want %q", tc.in, err, tc.want)
		}
	}
}

func FuzzReadMap(f *testing.F) {
	f.Add([]byte(sampleJSON))
	golden, _ := os.ReadFile("testdata/detect.golden")
	for _, line := range strings.Split(string(golden), "\n") {
		if strings.HasPrefix(line, "{") {
			f.Add([]byte(line))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ReadMap(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		for _, tr := range m.Translations {
			m.Canonical(tr.Before)
			m.Canonical(tr.After)
		}
		var b bytes.Buffer
		if err := m.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadMap(&b, "again"); err != nil {
			t.Fatalf("written map does not read back: %v\n%s", err, b.String())
		}
	})
}

func ExampleDetect() {
	// One request through a router doing DNAT 10.0.1.100:80 → 10.0.2.2:8080,
	// seen by a sniffer on each side (capture 0 before the router, 1 after).
	pkts := tcpFlow("10.0.1.2:40000", "10.0.1.100:80", "10.0.1.2:40000", "10.0.2.2:8080", 1000, 0)
	m := Detect(pkts, Options{})
	m.WriteText(os.Stdout)
	fmt.Println(m.Canonical("10.0.1.100:80"))
	// Output:
	// dnat tcp 10.0.1.100:80 -> 10.0.2.2:8080  (1 flows, 6 packets)
	// 10.0.2.2:8080
}
