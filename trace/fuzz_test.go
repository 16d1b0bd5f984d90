package trace

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"testing"
)

// FuzzRead feeds arbitrary bytes to the format-sniffing reader: it must never
// panic, and whatever it accepts must be valid and survive a text round trip.
func FuzzRead(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("1.000 CALL_SENT client web 17\n1.020 RET_SENT web client 17\n"))
	tr, _ := ReadText(bytes.NewReader([]byte(sample)), "s")
	var bin bytes.Buffer
	WriteBinary(&bin, tr)
	f.Add(bin.Bytes())
	f.Add([]byte(actorSample))
	tr, _ = ReadText(bytes.NewReader([]byte(actorSample)), "a")
	bin.Reset()
	WriteBinary(&bin, tr)
	f.Add(bin.Bytes())
	for _, old := range []string{"testdata/v1.bin", "testdata/v2.bin"} {
		if data, err := os.ReadFile(old); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(BinaryMagic + "garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		if err := tr.CheckValid(); err != nil {
			t.Fatalf("accepted an invalid trace: %v", err)
		}
		var out bytes.Buffer
		if err := WriteText(&out, tr); err != nil {
			t.Fatal(err)
		}
		back, err := ReadText(&out, "again")
		if err != nil || len(back.Messages) != len(tr.Messages) {
			t.Fatalf("text round trip: %d → %d messages, %v (warnings %v)", len(tr.Messages), len(back.Messages), err, back.Warnings)
		}
	})
}

// FuzzReadWhole: an input of known size is decompressed at once (see
// readBinarySized); whatever the bytes, that must read exactly as the
// stream does: the same error, or the same trace and warnings.
func FuzzReadWhole(f *testing.F) {
	var bin bytes.Buffer
	WriteBinary(&bin, bigTrace(300))
	data := bin.Bytes()
	f.Add(data)
	f.Add(data[:len(data)-3])
	f.Add(data[:len(data)/2])
	f.Add(append(append([]byte{}, data...), "trailing"...))
	flip := append([]byte{}, data...)
	flip[len(flip)/3] ^= 0x40
	f.Add(flip)
	tr, _ := ReadText(bytes.NewReader([]byte(actorSample)), "a")
	bin.Reset()
	WriteBinary(&bin, tr)
	f.Add(bin.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		if !bytes.HasPrefix(data, []byte(BinaryMagic)) {
			return
		}
		whole, _, errW := readSized(bytes.NewReader(data), "f", int64(len(data)))
		stream, _, errS := readSized(bytes.NewReader(data), "f", 0)
		if fmt.Sprint(errW) != fmt.Sprint(errS) {
			t.Fatalf("whole: %v; stream: %v", errW, errS)
		}
		if errW != nil {
			return
		}
		if !reflect.DeepEqual(whole, stream) {
			t.Fatalf("whole and stream differ: %d and %d messages, warnings %q and %q", len(whole.Messages), len(stream.Messages), whole.Warnings, stream.Warnings)
		}
	})
}
