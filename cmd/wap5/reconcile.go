package main

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"wap5/internal/hugemem"
	"wap5/nat"
	"wap5/reconcile"
	"wap5/trace"
)

func init() {
	register(func() *cli.Command {
		return &cli.Command{
			Name:      "reconcile",
			Usage:     "per-process logs and/or pcap files → one message trace",
			ArgsUsage: "INPUT...",
			Description: "INPUTs are libsockcap log files, directories holding them (searched recursively,\n" +
				"e.g. the --out DIR of several `wap5 run --node HOST` runs), and pcap/pcapng\n" +
				"captures (recognised by content; in directories *.pcap, *.pcapng, *.cap).\n" +
				"Output: the text trace on stdout; with -o FILE, the binary trace when FILE ends\n" +
				"in .bin or .w5t (or --format binary), else text. Warnings (damaged logs with\n" +
				"file and offset, address translations found as `nat: ...`, losses) go to stderr.\n" +
				"Hosts seen only in captures are named by address unless --hosts names them;\n" +
				"packets of hosts whose processes are logged are ignored (the logs say more).\n\n" +
				"A message is the bytes one end sends until it receives (a \"fat message\");\n" +
				"its send time is the first write, its receive time the read that delivered\n" +
				"its first byte (--recv-at last: its last byte).",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "granularity", Value: "host", Usage: "node names: host (HOST), program (HOST/EXE) or process (HOST/EXE/PID)"},
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the trace to `FILE` (- for stdout)"},
				&cli.StringFlag{Name: "format", Usage: "text or binary (default: binary for .bin/.w5t files, else text)"},
				&cli.BoolFlag{Name: "aggregate-clients", Usage: "name client nodes CLIENT and ephemeral ports * (WAP5 §2.5)"},
				&cli.StringFlag{Name: "nat", Usage: "known address translations: `FILE` in the form of wap5 nat --json"},
				&cli.BoolFlag{Name: "no-nat-detect", Usage: "do not pair translated flows automatically"},
				&cli.StringFlag{Name: "hosts", Usage: "name hosts seen in captures by address: `FILE` in /etc/hosts form"},
				&cli.DurationFlag{Name: "split-gap", Usage: "also end a message when its sender pauses longer than this (0: never)"},
				&cli.StringFlag{Name: "recv-at", Value: "first", Usage: "a message's receive time: the read of its first or last byte"},
				&cli.DurationFlag{Name: "window", Value: reconcile.DefaultWindow, Usage: "how long an end waits for its peer before it counts as untraced; must exceed what remains of the clock differences between hosts once the offsets estimated from connection handshakes are corrected"},
				&cli.DurationFlag{Name: "packet-reorder", Value: reconcile.DefaultPacketReorder, Usage: "how far a capture's packets may be out of time order: captures are read through a window this long (memory bounded by it); later stragglers are warned about"},
				&cli.DurationFlag{Name: "sort-window", Value: reconcile.DefaultSortWindow, Usage: "messages are written in time order as the inputs are read, held until nothing still in flight is older, but at most this long behind the inputs (memory bounded by it); a message decided later is written out of order with a warning"},
				&cli.BoolFlag{Name: "synced-clocks", Usage: "skip estimating the hosts' clock offsets before matching (one pass over the logs less; clocks must agree within --window)"},
			},
			Action: reconcileAction,
		}
	})
}

func reconcileAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return usagef("reconcile: no INPUT given (wap5 reconcile [--granularity host|program|process] [-o FILE] INPUT...)")
	}
	var opts reconcile.Options
	var err error
	if opts.Granularity, err = reconcile.ParseGranularity(c.String("granularity")); err != nil {
		return usagef("reconcile: %v", err)
	}
	switch c.String("recv-at") {
	case "first":
	case "last":
		opts.RecvAt = reconcile.RecvLast
	default:
		return usagef("reconcile: --recv-at %q: want first or last", c.String("recv-at"))
	}
	out := c.String("output")
	binary := false
	switch c.String("format") {
	case "":
		binary = strings.HasSuffix(out, ".bin") || strings.HasSuffix(out, ".w5t")
	case "binary":
		binary = true
	case "text":
	default:
		return usagef("reconcile: --format %q: want text or binary", c.String("format"))
	}
	if binary && (out == "" || out == "-") {
		if f, ok := c.App.Writer.(*os.File); ok && isTerminal(f) {
			return usagef("reconcile: not writing a binary trace to a terminal; use -o FILE")
		}
	}
	opts.ReturnMemory = true // one trace per process: keep the peak low
	opts.AggregateClients = c.Bool("aggregate-clients")
	opts.DisableNATDetection = c.Bool("no-nat-detect")
	opts.SplitGap = c.Duration("split-gap")
	opts.Window = c.Duration("window")
	opts.SyncedClocks = c.Bool("synced-clocks")
	opts.PacketReorder = c.Duration("packet-reorder")
	opts.SortWindow = c.Duration("sort-window")
	if opts.SplitGap < 0 || opts.Window <= 0 || opts.PacketReorder <= 0 || opts.SortWindow <= 0 {
		return usagef("reconcile: --window must be positive, --packet-reorder must be positive, --sort-window must be positive and --split-gap not negative")
	}
	if f := c.String("nat"); f != "" {
		r, err := os.Open(f)
		if err != nil {
			return err
		}
		m, err := nat.ReadMap(r, f)
		r.Close()
		if err != nil {
			return err
		}
		for _, t := range m.Translations {
			opts.NAT = append(opts.NAT, reconcile.Translation(t))
		}
	}
	var in reconcile.Inputs
	if f := c.String("hosts"); f != "" {
		h, warns, err := reconcile.ReadHostsFile(f)
		if err != nil {
			return err
		}
		for _, w := range warns {
			fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
		}
		in.Hosts = h
	}
	var size int64
	for _, arg := range c.Args().Slice() {
		if err := classifyInput(arg, &in, &size); err != nil {
			return err
		}
	}
	hugemem.Reserve(heapReserve(size))
	if os.Getenv("GOGC") == "" {
		// Most of reconcile's heap lives long (connections, endpoint
		// names, NAT indexes), so at GOGC 100 the peak is up to twice it:
		// at 50, the CoDeeN-sized set peaks at 390 instead of 465 MB
		// (≤ 100 B/msg) for ≈ 7 % more CPU; loopback runs, whose heap
		// stays small, do not change (bench/RESULTS.md, session 6).
		debug.SetGCPercent(reconcileGCPercent)
	}
	// The trace is written as reconcile lets the messages go, in time
	// order, while it reads the inputs (never built in memory as a whole):
	// text lines at once, a binary trace's blocks spooled until its tables
	// are final.
	sink := &streamSink{path: out, stdout: c.App.Writer, binary: binary}
	opts.Stream = sink
	if binary {
		opts.Stream = binarySink{sink}
	}
	t, err := reconcile.Reconcile(in, opts)
	if t != nil {
		for _, w := range t.Warnings {
			fmt.Fprintf(c.App.ErrWriter, "wap5: warning: %s\n", w)
		}
	}
	if cerr := sink.close(err == nil); err == nil {
		err = cerr
	}
	return err
}

// streamSink writes the trace as reconcile hands out its messages: to
// path, or to stdout for "" and "-". Text lines go out at once; a binary
// trace's message blocks go to a scratch file next to the output (removed
// at once: it lives while open) and follow the tables when they are final.
type streamSink struct {
	path   string
	stdout io.Writer
	binary bool
	f      *os.File
	buf    *bufio.Writer
	// text
	line []byte
	// binary
	scratch *os.File
	sw      *trace.SpoolWriter
	ended   bool
	fresh   bool // the output did not exist before
}

// open creates the output (text) or the scratch file (binary) at the first
// message.
func (s *streamSink) open(t *trace.Trace) error {
	if s.buf != nil || s.sw != nil {
		return nil
	}
	if s.binary {
		dir := os.TempDir()
		if s.path != "" && s.path != "-" {
			dir = filepath.Dir(s.path)
		}
		f, err := os.CreateTemp(dir, ".wap5-reconcile-*.spool")
		if err != nil && dir != os.TempDir() {
			f, err = os.CreateTemp("", ".wap5-reconcile-*.spool") // e.g. -o /dev/null
		}
		if err != nil {
			return err
		}
		os.Remove(f.Name())
		s.scratch, s.sw = f, trace.NewSpoolWriter(f)
		return nil
	}
	if err := s.create(); err != nil {
		return err
	}
	return trace.WriteTextHeader(s.buf, t)
}

func (s *streamSink) create() error {
	var w io.Writer = s.stdout
	if s.path != "" && s.path != "-" {
		_, err := os.Lstat(s.path)
		s.fresh = os.IsNotExist(err)
		f, err := os.Create(s.path)
		if err != nil {
			return err
		}
		s.f, w = f, f
	}
	s.buf = bufio.NewWriterSize(w, 1<<20)
	return nil
}

func (s *streamSink) Messages(t *trace.Trace, msgs []trace.Message) error {
	if err := s.open(t); err != nil {
		return err
	}
	if s.binary {
		return s.sw.Write(msgs)
	}
	for i := range msgs {
		s.line = trace.AppendMessageText(s.line[:0], t, &msgs[i])
		s.line = append(s.line, '\n')
		if _, err := s.buf.Write(s.line); err != nil {
			return err
		}
	}
	return nil
}

func (s *streamSink) End(t *trace.Trace, n int) error { return s.end(t, n, nil) }

// binarySink is a streamSink of a binary trace, whose tables are written
// last: it takes the endpoints' names only then (reconcile.LateNames), so
// reconcile never holds them as strings.
type binarySink struct{ *streamSink }

func (s binarySink) EndNamed(t *trace.Trace, n int, names trace.EndpointNames) error {
	return s.end(t, n, names)
}

// end writes a binary trace's tables, the endpoints named by names (nil:
// t's).
func (s *streamSink) end(t *trace.Trace, n int, names trace.EndpointNames) error {
	if err := s.open(t); err != nil {
		return err
	}
	s.ended = true
	if !s.binary {
		return nil
	}
	if err := s.create(); err != nil {
		return err
	}
	return s.sw.FinishNamed(s.buf, t, names)
}

// close finishes the output; ok false (reconcile failed) leaves no
// half-written file of its own behind.
func (s *streamSink) close(ok bool) error {
	var err error
	if s.buf != nil {
		err = s.buf.Flush()
	}
	if s.f != nil {
		if cerr := s.f.Close(); err == nil {
			err = cerr
		}
		if (!ok || !s.ended) && s.fresh {
			os.Remove(s.path) // ours, half written (never /dev/null or a file that was there)
		}
	}
	if s.scratch != nil {
		s.scratch.Close()
	}
	return err
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// classifyInput sorts an argument into logs and captures: files by their
// first bytes, directories by walking them for captures (the log reader
// finds the logs in them itself).
func classifyInput(arg string, in *reconcile.Inputs, size *int64) error {
	st, err := os.Stat(arg)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		*size += st.Size()
		if isCapture(arg) {
			in.Pcaps = append(in.Pcaps, arg)
		} else {
			in.Logs = append(in.Logs, arg)
		}
		return nil
	}
	in.Logs = append(in.Logs, arg)
	return filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			*size += fi.Size()
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".pcap", ".pcapng", ".cap":
			if isCapture(p) {
				in.Pcaps = append(in.Pcaps, p)
			}
		}
		return nil
	})
}

// reconcileGCPercent is the collector's GOGC in wap5 reconcile unless the
// environment sets one.
const reconcileGCPercent = 50

// heapReserve is how much heap to reserve in huge pages (hugemem.Reserve)
// for inputs of size bytes: reconcile's heap peaks at 7 to 18 times the
// size of sealed logs (1M loopback messages: 3.5 MB of logs, ~25 MB of heap
// with the zstd encoder's window; CoDeeN-like logs of 1M and 4.7M
// messages: 14 and 66 MB, ~260 and ~590 MB peak RSS), so 24 times, at most
// 2 GB (captures, streamed, need less; untouched, the reserve costs
// address space only).
func heapReserve(size int64) int {
	return int(min(24*size, 2<<30))
}

// isCapture recognises pcap (either byte order, µs or ns) and pcapng.
func isCapture(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return false
	}
	switch string(b[:]) {
	case "\xd4\xc3\xb2\xa1", "\xa1\xb2\xc3\xd4", "\x4d\x3c\xb2\xa1", "\xa1\xb2\x3c\x4d", "\x0a\x0d\x0d\x0a":
		return true
	}
	return false
}
