package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"wap5/libsockcap"
)

func init() {
	register(func() *cli.Command {
		return &cli.Command{
			Name:      "dump",
			Usage:     "decode per-process logs (files or directories)",
			ArgsUsage: "LOG...",
			Description: "Without --json: one block per process (a header line, then an aligned table of\n" +
				"its socket calls, wall-clock time in UTC). --json: one object per event and line.\n" +
				"--summary: one line per process with its counts. Damaged records are reported on\n" +
				"stderr and skipped; everything readable is printed.",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "json", Usage: "one JSON object per event and line"},
				&cli.BoolFlag{Name: "summary", Usage: "one line per process: event counts and bytes each way"},
			},
			Action: dumpAction,
		}
	})
}

// eventSource is the part of *libsockcap.Scanner that dump reads, so tests
// can feed it made-up events.
type eventSource interface {
	Process() *libsockcap.Process
	Scan() bool
	Event() *libsockcap.Event
	Err() error
	Warnings() []error
}

type dumpFormat int

const (
	dumpTable dumpFormat = iota
	dumpJSON
	dumpSummary
)

func dumpAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return usagef("dump: no LOG given (wap5 dump [--json] LOG...)")
	}
	format := dumpTable
	switch {
	case c.Bool("json") && c.Bool("summary"):
		return usagef("dump: --json and --summary exclude each other")
	case c.Bool("json"):
		format = dumpJSON
	case c.Bool("summary"):
		format = dumpSummary
	}
	logs, err := libsockcap.FindLogs(c.Args().Slice()...)
	if err != nil {
		return err
	}
	if len(logs) == 0 {
		return fmt.Errorf("no logs in %s", strings.Join(c.Args().Slice(), " "))
	}
	w := bufio.NewWriterSize(c.App.Writer, 64<<10)
	read := 0
	var lastErr error
	for _, path := range logs {
		sc, err := libsockcap.Open(path)
		if err != nil {
			w.Flush()
			printWarning(c.App.ErrWriter, err)
			lastErr = err
			continue
		}
		err = dumpLog(w, c.App.ErrWriter, sc, format)
		sc.Close()
		if err != nil {
			lastErr = err
			continue
		}
		read++
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if read == 0 {
		return fmt.Errorf("nothing readable in %d logs (last error: %v)", len(logs), lastErr)
	}
	return nil
}

// printWarning prints a reader warning as `wap5: warning: FILE: offset N: msg`.
func printWarning(stderr io.Writer, err error) {
	var d *libsockcap.DamageError
	if errors.As(err, &d) {
		fmt.Fprintf(stderr, "wap5: warning: %s: offset %d: %s\n", d.File, d.Offset, d.Msg)
		return
	}
	fmt.Fprintf(stderr, "wap5: warning: %v\n", err)
}

// dumpLog writes one log's events in the chosen format, then its damage
// warnings to stderr. Only an I/O error of the log is returned.
func dumpLog(w *bufio.Writer, stderr io.Writer, src eventSource, format dumpFormat) error {
	p := src.Process()
	var buf []byte
	var sum procSummary
	if format == dumpTable {
		buf = appendTableHeader(buf[:0], p)
	}
	for src.Scan() {
		ev := src.Event()
		switch format {
		case dumpJSON:
			buf = appendEventJSON(buf, ev, p)
		case dumpTable:
			buf = appendEventRow(buf, ev)
		case dumpSummary:
			sum.add(ev)
		}
		if len(buf) > 32<<10 {
			w.Write(buf)
			buf = buf[:0]
		}
	}
	if format == dumpSummary {
		buf = sum.appendLine(buf, p)
	}
	w.Write(buf)
	// Warnings after the events they interrupt; flush first so that the
	// order holds when both streams go to one terminal.
	warnings := src.Warnings()
	err := src.Err()
	if len(warnings) > 0 || err != nil {
		w.Flush()
	}
	for _, d := range warnings {
		printWarning(stderr, d)
	}
	if err != nil {
		printWarning(stderr, err)
	}
	return err
}

// fdOp reports whether op acts on a file descriptor.
func fdOp(op libsockcap.Op) bool {
	switch op {
	case libsockcap.OpFork, libsockcap.OpExec, libsockcap.OpExit, libsockcap.OpResolve, libsockcap.OpGap, libsockcap.OpNone:
		return false
	}
	return true
}

// hasFd2 reports whether Fd2 means something for op.
func hasFd2(op libsockcap.Op) bool {
	// The reader sets Fd2 to -1 when the record has none.
	return op == libsockcap.OpDup || op == libsockcap.OpAccept || op == libsockcap.OpSocketpair
}

func isTransfer(op libsockcap.Op) bool { return op == libsockcap.OpSend || op == libsockcap.OpRecv }

// appendEventJSON appends the contract's object for ev and a newline. Fields
// that do not apply to the operation are omitted; errno only when nonzero.
// Beyond the contract: dur_ns, fd2, sum (UDP payload checksum), peer_pid,
// child (fork), name (resolver, exec) and lost (gap: records lost).
func appendEventJSON(b []byte, ev *libsockcap.Event, p *libsockcap.Process) []byte {
	b = append(b, `{"ts_ns":`...)
	b = strconv.AppendInt(b, ev.Time, 10)
	b = append(b, `,"host":`...)
	b = appendJSONString(b, p.Host)
	b = append(b, `,"node":`...)
	b = appendJSONString(b, p.Node)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(p.Pid), 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, int64(ev.Tid), 10)
	b = append(b, `,"op":`...)
	b = appendJSONString(b, ev.Op.String())
	if fdOp(ev.Op) {
		b = append(b, `,"fd":`...)
		b = strconv.AppendInt(b, int64(ev.Fd), 10)
		b = append(b, `,"proto":"`...)
		b = append(b, ev.Proto.String()...)
		b = append(b, '"')
	}
	if !ev.Local.IsZero() {
		b = append(b, `,"local":`...)
		b = appendJSONString(b, ev.Local.String())
	}
	if !ev.Remote.IsZero() {
		b = append(b, `,"remote":`...)
		b = appendJSONString(b, ev.Remote.String())
	}
	if isTransfer(ev.Op) {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, ev.Bytes, 10)
	}
	if ev.Op == libsockcap.OpGap {
		b = append(b, `,"lost":`...)
		b = strconv.AppendInt(b, ev.Bytes, 10)
	} else {
		b = append(b, `,"ret":`...)
		b = strconv.AppendInt(b, ev.Ret, 10)
	}
	if ev.Errno != 0 {
		b = append(b, `,"errno":`...)
		b = strconv.AppendInt(b, int64(ev.Errno), 10)
	}
	if ev.Dur != 0 {
		b = append(b, `,"dur_ns":`...)
		b = strconv.AppendInt(b, ev.Dur, 10)
	}
	if hasFd2(ev.Op) && ev.Fd2 >= 0 {
		b = append(b, `,"fd2":`...)
		b = strconv.AppendInt(b, int64(ev.Fd2), 10)
	}
	if ev.Proto == libsockcap.ProtoUDP && isTransfer(ev.Op) && ev.Bytes > 0 {
		b = append(b, `,"sum":`...)
		b = strconv.AppendUint(b, uint64(ev.Sum), 10)
	}
	if ev.PeerPid != 0 {
		b = append(b, `,"peer_pid":`...)
		b = strconv.AppendInt(b, int64(ev.PeerPid), 10)
	}
	if ev.Op == libsockcap.OpFork {
		b = append(b, `,"child":`...)
		b = strconv.AppendInt(b, int64(ev.Child), 10)
	}
	if ev.Name != "" {
		b = append(b, `,"name":`...)
		b = appendJSONString(b, ev.Name)
	}
	return append(b, "}\n"...)
}

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// Table columns; wider values push the row, they are never cut.
const tableColumns = "%-18s %7s %-10s %4s %-5s %-21s %-21s %8s %8s  %s\n"

func appendTableHeader(b []byte, p *libsockcap.Process) []byte {
	b = fmt.Appendf(b, "# pid %d ppid %d node %s host %s exe %s start %s clock %s\n",
		p.Pid, p.Ppid, p.Node, p.Host, p.Exe,
		time.Unix(0, p.StartWall).UTC().Format(time.RFC3339Nano), p.ClockSource)
	if p.NetNS != 0 {
		// Loopback addresses mean something only within one network namespace.
		b = fmt.Appendf(b, "# boot %s netns %d\n", p.BootID, p.NetNS)
	}
	b = fmt.Appendf(b, "# argv %s\n# file %s\n", quoteArgv(p.Argv), p.File)
	return fmt.Appendf(b, tableColumns, "TIME(UTC)", "TID", "OP", "FD", "PROTO", "LOCAL", "REMOTE", "BYTES", "RET", "MORE")
}

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$") {
			q[i] = strconv.Quote(a)
		} else {
			q[i] = a
		}
	}
	return strings.Join(q, " ")
}

func appendEventRow(b []byte, ev *libsockcap.Event) []byte {
	ts := time.Unix(0, ev.Time).UTC().Format("15:04:05.000000000")
	fd, proto, bytes, ret := "-", "-", "-", strconv.FormatInt(ev.Ret, 10)
	if fdOp(ev.Op) {
		fd, proto = strconv.Itoa(int(ev.Fd)), ev.Proto.String()
	}
	if isTransfer(ev.Op) {
		bytes = strconv.FormatInt(ev.Bytes, 10)
	}
	var more []string
	if ev.Errno != 0 {
		more = append(more, fmt.Sprintf("errno=%d(%s)", ev.Errno, errnoText(ev.Errno)))
	}
	if ev.Op == libsockcap.OpGap {
		ret = "-"
		more = append(more, fmt.Sprintf("lost=%d", ev.Bytes))
	}
	if hasFd2(ev.Op) && ev.Fd2 >= 0 {
		more = append(more, fmt.Sprintf("fd2=%d", ev.Fd2))
	}
	if ev.Dur != 0 {
		more = append(more, "dur="+time.Duration(ev.Dur).String())
	}
	if ev.Proto == libsockcap.ProtoUDP && isTransfer(ev.Op) && ev.Bytes > 0 {
		more = append(more, fmt.Sprintf("sum=%08x", ev.Sum))
	}
	if ev.PeerPid != 0 {
		more = append(more, fmt.Sprintf("peer_pid=%d", ev.PeerPid))
	}
	if ev.Op == libsockcap.OpFork {
		more = append(more, fmt.Sprintf("child=%d", ev.Child))
	}
	if ev.Name != "" {
		more = append(more, "name="+strconv.Quote(ev.Name))
	}
	n := len(b)
	b = fmt.Appendf(b, tableColumns, ts, strconv.Itoa(int(ev.Tid)), ev.Op.String(), fd, proto,
		orDash(ev.Local.String()), orDash(ev.Remote.String()), bytes, ret, strings.Join(more, " "))
	return trimRow(b, n)
}

// trimRow drops the blanks before the newline of the row that starts at n.
func trimRow(b []byte, n int) []byte {
	end := len(b) - 1
	i := end
	for i > n && b[i-1] == ' ' {
		i--
	}
	b[i] = '\n'
	return b[:i+1]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// errnoText is the C library's message for an errno value.
func errnoText(e int32) string { return syscall.Errno(e).Error() }

// procSummary counts one process's events for --summary.
type procSummary struct {
	events, connects, accepts, sends, recvs, sentBytes, recvBytes, lost int64
	first, last                                                         int64
}

func (s *procSummary) add(ev *libsockcap.Event) {
	if ev.Op == libsockcap.OpGap {
		s.lost += ev.Bytes
		return
	}
	s.events++
	if s.first == 0 || ev.Time < s.first {
		s.first = ev.Time
	}
	if ev.Time > s.last {
		s.last = ev.Time
	}
	switch ev.Op {
	case libsockcap.OpConnect:
		s.connects++
	case libsockcap.OpAccept:
		s.accepts++
	case libsockcap.OpSend:
		s.sends++
		s.sentBytes += ev.Bytes
	case libsockcap.OpRecv:
		s.recvs++
		s.recvBytes += ev.Bytes
	}
}

func (s *procSummary) appendLine(b []byte, p *libsockcap.Process) []byte {
	exe := p.Program()
	span := time.Duration(0)
	if s.last > s.first {
		span = time.Duration(s.last - s.first).Round(time.Microsecond)
	}
	b = fmt.Appendf(b, "%-20s pid %-7d ppid %-7d %6d events  %4d connect %4d accept  %6d send %10d B  %6d recv %10d B  over %v",
		p.Node+"/"+exe, p.Pid, p.Ppid, s.events, s.connects, s.accepts, s.sends, s.sentBytes, s.recvs, s.recvBytes, span)
	if s.lost > 0 {
		b = fmt.Appendf(b, "  %d lost", s.lost)
	}
	return append(b, '\n')
}
