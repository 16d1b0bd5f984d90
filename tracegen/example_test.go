package tracegen_test

import (
	"fmt"
	"os"
	"strings"

	"wap5/trace"
	"wap5/tracegen"
)

// A client calls a web server, which calls a database; the database's clock
// runs 5 ms ahead, so its returns sort after the web server's (the trace is
// sorted by each message's send time on its sender's clock). Every message
// carries its path instance in truth=; with "parents", also the id of the
// message that caused it. Calls reuse persistent connections (one call at a
// time each) from random ephemeral ports, as real clients do.
func ExampleWrite() {
	cfg, err := tracegen.ParseConfig(strings.NewReader(`
seed 1
messages 8
parents
node client client ip=10.0.0.5
node web ip=10.0.1.1 port=80
node db ip=10.0.2.1 port=5432 offset=5ms
link * * delay=1ms
tracelet page from=client think=100ms
  call web reply=2ms
    call db wait=3ms reply=4ms
`), "example.gen")
	if err != nil {
		fmt.Println(err)
		return
	}
	sum, err := tracegen.Write(os.Stdout, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sum.Messages, "messages,", sum.Instances, "instances")
	// Output:
	// # wap5 message trace v1
	// 1700000000.006261612 client 10.0.0.5:58230 1700000000.007261612 web 10.0.1.1:80 200 id=1 kind=call call=1 truth=1
	// 1700000000.010261612 web 10.0.1.1:53355 1700000000.016261612 db 10.0.2.1:5432 200 id=2 kind=call call=2 truth=1 parent=1
	// 1700000000.018261612 web 10.0.1.1:80 1700000000.019261612 client 10.0.0.5:58230 1000 id=4 kind=return call=1 truth=1 parent=3
	// 1700000000.020261612 db 10.0.2.1:5432 1700000000.016261612 web 10.0.1.1:53355 1000 id=3 kind=return call=2 truth=1 parent=2
	// 1700000000.119261612 client 10.0.0.5:58230 1700000000.120261612 web 10.0.1.1:80 200 id=5 kind=call call=3 truth=2
	// 1700000000.123261612 web 10.0.1.1:53355 1700000000.129261612 db 10.0.2.1:5432 200 id=6 kind=call call=4 truth=2 parent=5
	// 1700000000.131261612 web 10.0.1.1:80 1700000000.132261612 client 10.0.0.5:58230 1000 id=8 kind=return call=3 truth=2 parent=7
	// 1700000000.133261612 db 10.0.2.1:5432 1700000000.129261612 web 10.0.1.1:53355 1000 id=7 kind=return call=4 truth=2 parent=6
	// 8 messages, 2 instances
}

// Generate returns the trace in memory, for tests and in-process pipelines.
func ExampleGenerate() {
	cfg, _ := tracegen.ParseConfig(strings.NewReader(`
messages 1000
node a client count=3
node b untraced
link * * delay=normal(10ms,1ms)
tracelet ping from=a think=uniform(0s,1s) parallel=3
  call b reply=exp(5ms)
`), "ping.gen")
	t, err := tracegen.Generate(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	untracedEnds := 0
	for _, m := range t.Messages {
		if m.Send == trace.Unknown || m.Recv == trace.Unknown {
			untracedEnds++
		}
	}
	fmt.Println(len(t.Messages), "messages, each with one untraced end:", untracedEnds == len(t.Messages))
	// Output:
	// 1000 messages, each with one untraced end: true
}
