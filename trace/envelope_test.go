package trace

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// readBoth reads data (a binary trace) into envelopes and with the full
// reader (ReadFileValid's path). ok is false when the envelope decoder
// declined it (errNoEnvelopes: ReadFileEnvelopes then uses the full
// reader).
func readBoth(data []byte) (envT *Trace, env []Envelope, envErr error, full *Trace, fullErr error, ok bool) {
	var e envelopes
	envT, _, envErr = readBinarySized(bytes.NewReader(data), "f", int64(len(data)), &e)
	env = append([]Envelope(nil), e.list...)
	e.release()
	full, checked, fullErr := readSized(bytes.NewReader(data), "f", int64(len(data)))
	if fullErr == nil && !checked {
		if err := full.CheckValid(); err != nil {
			full, fullErr = nil, fmt.Errorf("f: %w", err)
		}
	}
	return envT, env, envErr, full, fullErr, envErr != errNoEnvelopes
}

// sameAsFull fails t unless the envelope decoder's result is the full
// reader's: the same error, or the same tables and warnings, no messages
// of its own, and the envelopes of the full reader's messages.
func sameAsFull(t *testing.T, data []byte) (decoded bool) {
	t.Helper()
	envT, env, envErr, full, fullErr, ok := readBoth(data)
	if !ok {
		return false
	}
	if fmt.Sprint(envErr) != fmt.Sprint(fullErr) {
		t.Fatalf("envelopes: %v; full: %v", envErr, fullErr)
	}
	if envErr != nil {
		return true
	}
	if len(envT.Messages) != 0 || len(envT.Extra) != 0 {
		t.Fatalf("envelope read kept %d messages, %d extras", len(envT.Messages), len(envT.Extra))
	}
	want := make([]Envelope, len(full.Messages))
	for i := range full.Messages {
		want[i] = EnvelopeOf(&full.Messages[i])
	}
	if !reflect.DeepEqual(env, want) && (len(env) > 0 || len(want) > 0) {
		t.Fatalf("envelopes differ from the full reader's (%d and %d)", len(env), len(want))
	}
	full.Messages, full.Extra = envT.Messages, envT.Extra
	full.MessagesEdited() // (its decoder's mark, of the messages taken away)
	if !reflect.DeepEqual(envT, full) {
		t.Fatalf("tables or warnings differ: %q and %q", envT.Warnings, full.Warnings)
	}
	return true
}

// FuzzReadEnvelopes: whatever the bytes, where the envelope decoder
// accepts an input it must read exactly what the full reader reads (the
// same error, or the same tables and warnings and the envelopes of the
// same messages); where it declines, ReadFileEnvelopes reads it with the
// full reader. An input is tried as a binary trace, and (since a change
// to compressed bytes mostly breaks the frame's checksum) as the
// decompressed content of one, compressed here: damage inside the tables
// and columns.
func FuzzReadEnvelopes(f *testing.F) {
	var bin bytes.Buffer
	WriteBinary(&bin, bigTrace(3000))
	data := bin.Bytes()
	f.Add(data)
	f.Add(data[:len(data)-3])
	f.Add(append(append([]byte{}, data...), "trailing"...))
	flip := append([]byte{}, data...)
	flip[len(flip)/3] ^= 0x40
	f.Add(flip)
	for _, tr := range []*Trace{bigTrace(300), bigTrace(2)} {
		bin.Reset()
		WriteBinary(&bin, tr)
		f.Add(decompressed(f, bin.Bytes()))
	}
	for _, s := range []string{sample, actorSample} {
		tr, _ := ReadText(bytes.NewReader([]byte(s)), "s")
		bin.Reset()
		WriteBinary(&bin, tr)
		f.Add(bin.Bytes())
		f.Add(decompressed(f, bin.Bytes()))
	}
	if old, err := os.ReadFile("testdata/v2.bin"); err == nil {
		f.Add(old)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if bytes.HasPrefix(data, []byte(BinaryMagic)) {
			sameAsFull(t, data)
			return
		}
		sameAsFull(t, enc.EncodeAll(data, []byte(BinaryMagic)))
	})
}

// decompressed is the content of the binary trace data (what follows the
// magic, decompressed).
func decompressed(f *testing.F, data []byte) []byte {
	dec, err := zstd.NewReader(nil)
	if err != nil {
		f.Fatal(err)
	}
	defer dec.Close()
	out, err := dec.DecodeAll(data[len(BinaryMagic):], nil)
	if err != nil {
		f.Fatal(err)
	}
	return out
}

// TestReadEnvelopes: the envelope decoder takes undamaged version 3
// traces (with actors, labels, unknown times, extra text, more than one
// block) and gives what the full reader gives; ReadFileEnvelopes falls
// back to the full reader for text, older versions, damaged files and a
// missing file, with its errors.
func TestReadEnvelopes(t *testing.T) {
	big := bigTrace(3*colBlock + 17)
	big.Extra = map[int32]string{5: "note=x", int32(colBlock + 3): "k=v w=z"}
	actors, err := ReadText(bytes.NewReader([]byte(actorSample)), "a")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, tr := range map[string]*Trace{"big": big, "actors": actors, "empty": New()} {
		var bin bytes.Buffer
		if err := WriteBinary(&bin, tr); err != nil {
			t.Fatal(err)
		}
		// The actor sample's messages have no id= (their ids are line
		// references, which the decoder leaves to CheckValid): declined.
		decoded := sameAsFull(t, bin.Bytes())
		if decoded != (name != "actors") {
			t.Errorf("%s: the envelope decoder took it: %v", name, decoded)
		}
		p := filepath.Join(dir, name+".bin")
		if err := os.WriteFile(p, bin.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		got, env, release, err := ReadFileEnvelopes(p)
		if err != nil || len(got.Messages) != 0 || len(env) != len(tr.Messages) {
			t.Errorf("%s: ReadFileEnvelopes: %d messages, %d envelopes, %v", name, len(got.Messages), len(env), err)
		}
		release()
		// Damaged: read as ReadFileValid reads it.
		if len(tr.Messages) > 1000 {
			cut := bin.Bytes()[:bin.Len()*2/3]
			if err := os.WriteFile(p, cut, 0o644); err != nil {
				t.Fatal(err)
			}
			want, wantErr := ReadFileValid(p)
			got, env, release, err := ReadFileEnvelopes(p)
			defer release()
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || err == nil && (len(env) != len(want.Messages) || !reflect.DeepEqual(got.Warnings, want.Warnings)) {
				t.Errorf("%s cut: %v, %d envelopes; ReadFileValid: %v", name, err, len(env), wantErr)
			}
		}
	}
	// Text and version 2: the full reader, envelopes of its messages.
	p := filepath.Join(dir, "t.trace")
	if err := os.WriteFile(p, []byte(actorSample), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{p, "testdata/v2.bin"} {
		want, wantErr := ReadFileValid(p)
		got, env, release, err := ReadFileEnvelopes(p)
		defer release()
		if wantErr != nil || err != nil || len(env) != len(want.Messages) || len(got.Messages) != 0 {
			t.Fatalf("%s: %v / %v", p, err, wantErr)
		}
		wantT := *want
		wantT.Messages, wantT.Extra = nil, nil
		if !reflect.DeepEqual(got, &wantT) {
			t.Fatalf("%s: tables differ", p)
		}
		for i := range env {
			if env[i] != EnvelopeOf(&want.Messages[i]) {
				t.Fatalf("%s: envelope %d is %+v, want %+v", p, i, env[i], EnvelopeOf(&want.Messages[i]))
			}
		}
	}
	_, _, _, err = ReadFileEnvelopes(filepath.Join(dir, "missing"))
	_, wantErr := ReadFileValid(filepath.Join(dir, "missing"))
	if err == nil || err.Error() != wantErr.Error() {
		t.Errorf("missing file: %v, want %v", err, wantErr)
	}
}
