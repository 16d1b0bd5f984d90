package trace

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// Read reads a trace in any of the forms wap5 knows, recognised by content:
// the binary form, the text form, or Project 5's format. file names the
// input in errors and warnings.
func Read(r io.Reader, file string) (*Trace, error) {
	t, _, err := readSized(r, file, 0)
	return t, err
}

// readSized is Read of an input of size bytes (0: unknown), which lets the
// text reader size its message slice once. checked says the reader has
// checked the trace as CheckValid does (the binary reader always does).
func readSized(r io.Reader, file string, size int64) (t *Trace, checked bool, err error) {
	t, checked, _, err = readSizedKinds(r, file, size, false)
	return t, checked, err
}

// readSizedKinds is readSized, with a binary or text trace's endpoints
// named by their kind alone where kinds is set (ReadFileKindNames);
// release gives that table's memory back.
func readSizedKinds(r io.Reader, file string, size int64, kinds bool) (t *Trace, checked bool, release func(), err error) {
	release = func() {}
	br := bufio.NewReaderSize(r, 64*1024)
	head, _ := br.Peek(4096)
	switch {
	case bytes.HasPrefix(head, []byte(BinaryMagic)):
		t, _, release, err = readBinaryKinds(br, file, size, nil, kinds)
		return t, true, release, err
	case len(head) > 0 && !isText(head):
		return nil, false, release, fmt.Errorf("%s: not a wap5 trace (binary data without the wap5 header)", file)
	case isProject5(head):
		t, err = ReadProject5(br, file)
		return t, false, release, err
	}
	t, err = readText(br, file, textMessages(head, size))
	if kinds && err == nil {
		release = namedByKind(t)
	}
	return t, false, release, err
}

// namedByKind names t's endpoints by their kind alone (kindNames), for a
// trace read with its names (text): the names become garbage. A table
// that does not start with "-" is left as it is (CheckValid reports it).
// It returns the function that gives the table's memory back.
func namedByKind(t *Trace) (release func()) {
	n := len(t.Endpoints)
	if n == 0 || t.Endpoints[0] != "-" {
		return func() {}
	}
	unix := make([]uint64, (n+63)/64)
	for i, name := range t.Endpoints {
		if strings.HasPrefix(name, "unix:") {
			unix[i/64] |= 1 << (i % 64)
		}
	}
	t.Endpoints, release = kindNames(n, unix)
	t.epIdx, t.epIndexed = nil, 0
	return release
}

func isText(head []byte) bool {
	if i := bytes.LastIndexByte(head, '\n'); i > 0 && len(head) == 4096 {
		head = head[:i] // a cut multi-byte character at the end is fine
	}
	return !bytes.ContainsRune(head, 0) && strings.ToValidUTF8(string(head), "\uFFFD") == string(head)
}

// ReadFile reads the trace in the named file ("-" for standard input).
func ReadFile(path string) (*Trace, error) {
	t, _, err := readFile(path)
	return t, err
}

// ReadFileValid is ReadFile followed by CheckValid (whose error it returns
// prefixed with path), without a second pass over the messages where the
// reader has checked them already (binary traces).
func ReadFileValid(path string) (*Trace, error) {
	t, checked, err := readFile(path)
	if err != nil {
		return nil, err
	}
	if !checked {
		if err := t.CheckValid(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return t, nil
}

// ReadFileEnvelopesOnly is ReadFileEnvelopes' direct path alone: the
// trace's tables and its messages' envelopes, decoded straight from a
// version 3 binary file and checked on the way. ok is false, with nothing
// kept, for anything else (another input, damage, a message not proven
// valid, a read error): the caller then reads the file the usual way
// (ReadFile), so that what it keeps, warns of and fails with are the same.
// release gives the envelopes' memory back, after which they must not be
// used.
func ReadFileEnvelopesOnly(path string) (t *Trace, env []Envelope, release func(), ok bool) {
	return readFileEnvelopesOnly(path, false)
}

// ReadFileEnvelopesNoNames is ReadFileEnvelopesOnly for a reader that
// needs no endpoint names (wap5 link's WAP5 method without clients
// aggregated or instances): t.Endpoints holds only the table's first
// name ("-"), while the envelopes keep the file's endpoint ids, checked
// against the file's table (as NewBinaryScannerNoNames does). The
// CoDeeN-sized trace has 1.9 million endpoints: 31 MB of names and 30 MB
// of string headers that the collector would scan, kept to the end.
// Where ReadFileEnvelopesOnly declines, so does it.
func ReadFileEnvelopesNoNames(path string) (t *Trace, env []Envelope, release func(), ok bool) {
	return readFileEnvelopesOnly(path, true)
}

func readFileEnvelopesOnly(path string, noNames bool) (t *Trace, env []Envelope, release func(), ok bool) {
	if path == "-" {
		return nil, nil, nil, false
	}
	e := envelopes{noNames: noNames}
	t, err := readFileEnvelopes(path, &e)
	if err != nil {
		e.release()
		return nil, nil, nil, false
	}
	return t, e.list, e.release, true
}

// ReadFileKindNames is ReadFile for a reader that reads of an endpoint
// only its identity (its id) and whether it is a unix socket's (wap5
// link without instances or clients aggregated: linking.NamesUnread). A
// binary trace's endpoints are named by their kind alone: t.Endpoints has
// the file's entries, "-" first, "unix:" for every name that starts so,
// "" for the others, in memory that costs next to nothing (kindNames); so
// t's endpoints must not be looked up by name (Trace.Endpoint) or added
// to. A text trace is read with its names, which are then replaced so
// (namedByKind); Project 5 traces are read as ReadFile reads them. release gives the
// table's memory back, after which t.Endpoints must not be used.
func ReadFileKindNames(path string) (t *Trace, release func(), err error) {
	t, _, release, err = readFileKinds(path, true)
	if err != nil {
		release()
		return nil, func() {}, err
	}
	return t, release, nil
}

func readFile(path string) (*Trace, bool, error) {
	t, checked, _, err := readFileKinds(path, false)
	return t, checked, err
}

// readFileKinds is readFile, with a binary trace's endpoints named by
// their kind alone where kinds is set (ReadFileKindNames).
func readFileKinds(path string, kinds bool) (t *Trace, checked bool, release func(), err error) {
	release = func() {}
	if path == "-" {
		return readSizedKinds(os.Stdin, "<stdin>", 0, kinds)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false, release, err
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	// A binary trace read whole is read from the file itself, not
	// through readSized's buffer: decompressWhole then maps the file
	// (decompressFile) instead of copying it into fresh memory.
	var magic [len(BinaryMagic)]byte
	if size > 0 && size <= wholeMax {
		if _, err := f.ReadAt(magic[:], 0); err == nil && string(magic[:]) == BinaryMagic {
			t, _, release, err = readBinaryKinds(f, path, size, nil, kinds)
			return t, true, release, err
		}
	}
	return readSizedKinds(f, path, size, kinds)
}

// WriteFile writes the trace to the named file, in binary form when binary
// is set and in text form otherwise ("-" for standard output).
func WriteFile(path string, t *Trace, binary bool) error {
	var w io.Writer = os.Stdout
	var f *os.File
	if path != "-" {
		var err error
		if f, err = os.Create(path); err != nil {
			return err
		}
		w = f
	}
	var err error
	if binary {
		err = WriteBinary(w, t)
	} else {
		err = WriteText(w, t)
	}
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
