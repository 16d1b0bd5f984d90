package trace

import (
	"bytes"
	"fmt"
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
