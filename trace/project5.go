package trace

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// ReadProject5 imports Project 5's trace format, one message per line:
//
//	timestamp CALL_SENT|RET_SENT sender receiver id
//
// Project 5's traces have one timestamp per message (a sniffer's), so it
// becomes both the send and the receive time; id pairs a call with its
// return. Bad lines become warnings naming file and line.
func ReadProject5(r io.Reader, file string) (*Trace, error) {
	t := New()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' {
			continue
		}
		f := strings.Fields(s)
		if len(f) != 5 {
			t.Warnf("%s:%d: want 5 fields (timestamp CALL_SENT|RET_SENT sender receiver id), got %d", file, line, len(f))
			continue
		}
		ts, err := ParseTime(f[0])
		if err != nil || ts == Unknown {
			t.Warnf("%s:%d: bad timestamp %q", file, line, f[0])
			continue
		}
		m := Message{Send: ts, Recv: ts, ID: NoRef, Truth: NoRef}
		switch f[1] {
		case "CALL_SENT":
			m.Kind = KindCall
		case "RET_SENT":
			m.Kind = KindReturn
		default:
			t.Warnf("%s:%d: want CALL_SENT or RET_SENT, got %q", file, line, f[1])
			continue
		}
		m.Src, m.Dst = t.Node(f[2]), t.Node(f[3])
		m.Call = t.Ref32(f[4])
		t.Messages = append(t.Messages, m)
	}
	if err := sc.Err(); err != nil {
		return t, fmt.Errorf("%s:%d: %w", file, line+1, err)
	}
	return t, nil
}

// isProject5 reports whether the first message line looks like Project 5's format.
func isProject5(head []byte) bool {
	for _, l := range strings.Split(string(head), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' {
			continue
		}
		f := strings.Fields(l)
		return len(f) >= 2 && (f[1] == "CALL_SENT" || f[1] == "RET_SENT")
	}
	return false
}
