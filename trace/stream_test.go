package trace

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestBinaryWriter: messages written in pieces of any size give the same
// file as WriteBinary of the whole trace.
func TestBinaryWriter(t *testing.T) {
	for _, n := range []int{0, 5, colBlock, 2*colBlock + 77} {
		tr := bigTrace(n)
		tr.Extra = nil
		var want bytes.Buffer
		if err := WriteBinary(&want, tr); err != nil {
			t.Fatal(err)
		}
		for _, piece := range []int{1, 1000, colBlock - 1, colBlock + 3} {
			t.Run(fmt.Sprintf("%d/%d", n, piece), func(t *testing.T) {
				if n > colBlock && piece == 1 {
					t.Skip("slow")
				}
				var got bytes.Buffer
				bw, err := NewBinaryWriter(&got, tr, n)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < n; i += piece {
					if err := bw.Write(tr.Messages[i:min(i+piece, n)]); err != nil {
						t.Fatal(err)
					}
				}
				if err := bw.Close(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Fatalf("pieces of %d: %d bytes differ from WriteBinary's %d", piece, got.Len(), want.Len())
				}
			})
		}
	}
}

func TestBinaryWriterCount(t *testing.T) {
	tr := bigTrace(10)
	var buf bytes.Buffer
	bw, _ := NewBinaryWriter(&buf, tr, 10)
	if err := bw.Write(tr.Messages[:4]); err != nil {
		t.Fatal(err)
	}
	if err := bw.Close(); err == nil || !strings.Contains(err.Error(), "10 messages announced, 4 written") {
		t.Errorf("short write: Close = %v", err)
	}
	bw, _ = NewBinaryWriter(&buf, tr, 3)
	if err := bw.Write(tr.Messages[:4]); err == nil {
		t.Errorf("long write accepted")
	}
}

// namesOf names endpoints from a table of strings (FinishNamed).
type namesOf []string

func (n namesOf) Len() int { return len(n) }
func (n namesOf) AppendName(b []byte, id EndpointID) []byte {
	return append(b, n[id]...)
}

// TestSpoolWriter: messages spooled in pieces of any size, with the tables
// only given at the end (and grown after the first messages), give the
// same file as WriteBinary of the whole trace, also with the endpoints
// named by FinishNamed; the text of them streamed with AppendMessageText
// is WriteText's.
func TestSpoolWriter(t *testing.T) {
	for _, n := range []int{0, 5, colBlock, 2*colBlock + 77} {
		tr := bigTrace(n)
		tr.Extra = nil
		var want bytes.Buffer
		if err := WriteBinary(&want, tr); err != nil {
			t.Fatal(err)
		}
		for _, piece := range []int{7, colBlock + 3, -1} {
			named := piece < 0
			if named {
				piece = 11
			}
			f, err := os.CreateTemp(t.TempDir(), "spool")
			if err != nil {
				t.Fatal(err)
			}
			// The tables grow while the messages are spooled.
			final := *tr
			early := *tr
			early.Nodes, early.Endpoints, early.Warnings = nil, nil, nil
			sw := NewSpoolWriter(f)
			for i := 0; i < n; i += piece {
				if err := sw.Write(tr.Messages[i:min(i+piece, n)]); err != nil {
					t.Fatal(err)
				}
			}
			if sw.Len() != n {
				t.Fatalf("Len %d, want %d", sw.Len(), n)
			}
			var got bytes.Buffer
			if named {
				names := namesOf(final.Endpoints)
				final.Endpoints = []string{"-"} // not read
				err = sw.FinishNamed(&got, &final, names)
			} else {
				err = sw.Finish(&got, &final)
			}
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("%d messages in pieces of %d: %d bytes differ from WriteBinary's %d", n, piece, got.Len(), want.Len())
			}
		}
		if n > colBlock {
			continue
		}
		var wantText, gotText bytes.Buffer
		if err := WriteText(&wantText, tr); err != nil {
			t.Fatal(err)
		}
		if err := WriteTextHeader(&gotText, tr); err != nil {
			t.Fatal(err)
		}
		var line []byte
		for i := range tr.Messages {
			line = append(AppendMessageText(line[:0], tr, &tr.Messages[i]), '\n')
			gotText.Write(line)
		}
		if !bytes.Equal(gotText.Bytes(), wantText.Bytes()) {
			t.Fatalf("%d messages: streamed text differs from WriteText's", n)
		}
	}
}
