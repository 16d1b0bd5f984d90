package reconcile_test

import (
	"fmt"
	"net/netip"
	"os"

	"wap5/libsockcap"
	"wap5/reconcile"
	"wap5/trace"
)

// Two traced processes on two hosts: a client writes a request in two
// writes, the server reads it in one read and answers. Reconciling their
// events gives one call and its return, with both ends' times.
func ExampleReconcileSources() {
	ep := func(s string) libsockcap.Endpoint { return libsockcap.Endpoint{Addr: netip.MustParseAddrPort(s)} }
	cli := &libsockcap.Process{Node: "web", Exe: "/usr/bin/curl", Pid: 7}
	srv := &libsockcap.Process{Node: "db", Exe: "/usr/sbin/kvd", Pid: 9}
	c, s := ep("10.0.0.1:40000"), ep("10.0.0.2:6379")
	const sec = int64(1e9)
	tcp := libsockcap.ProtoTCP
	client := reconcile.EventSource(cli, []libsockcap.Event{
		{Time: 1 * sec, Op: libsockcap.OpConnect, Fd: 3, Proto: tcp, Local: c, Remote: s},
		{Time: 1*sec + 1000, Op: libsockcap.OpSend, Fd: 3, Proto: tcp, Bytes: 20, Ret: 20},
		{Time: 1*sec + 2000, Op: libsockcap.OpSend, Fd: 3, Proto: tcp, Bytes: 30, Ret: 30},
		{Time: 1*sec + 90000, Op: libsockcap.OpRecv, Fd: 3, Proto: tcp, Bytes: 400, Ret: 400},
		{Time: 1*sec + 95000, Op: libsockcap.OpClose, Fd: 3},
	})
	server := reconcile.EventSource(srv, []libsockcap.Event{
		{Time: 1*sec + 500, Op: libsockcap.OpAccept, Fd: 5, Proto: tcp, Local: s, Remote: c},
		{Time: 1*sec + 40000, Op: libsockcap.OpRecv, Fd: 5, Proto: tcp, Bytes: 50, Ret: 50},
		{Time: 1*sec + 60000, Op: libsockcap.OpSend, Fd: 5, Proto: tcp, Bytes: 400, Ret: 400},
		{Time: 1*sec + 96000, Op: libsockcap.OpClose, Fd: 5},
	})
	t, err := reconcile.ReconcileSources([]reconcile.Source{client, server},
		reconcile.Options{Granularity: reconcile.ByProgram})
	if err != nil {
		fmt.Println(err)
		return
	}
	trace.WriteText(os.Stdout, t)
	// Output:
	// # wap5 message trace v1
	// 1.000001000 web/curl 10.0.0.1:40000 1.000040000 db/kvd 10.0.0.2:6379 50 id=0 kind=call call=0
	// 1.000060000 db/kvd 10.0.0.2:6379 1.000090000 web/curl 10.0.0.1:40000 400 id=1 kind=return call=0
}
