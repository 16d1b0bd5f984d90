package trace_test

import (
	"fmt"
	"os"
	"strings"

	"wap5/trace"
)

func Example() {
	in := `# wap5 message trace v1
1700000000.000100000 client 10.0.0.1:40001 1700000000.000300000 web 10.0.0.2:80 512 id=1
1700000000.004000000 web 10.0.0.2:80 1700000000.004150000 client 10.0.0.1:40001 2048 id=2
`
	t, err := trace.Read(strings.NewReader(in), "example")
	if err != nil {
		panic(err)
	}
	for _, m := range t.Messages {
		fmt.Printf("%s → %s: %d bytes, %.0f µs in flight\n", t.NodeName(m.Src), t.NodeName(m.Dst), m.Bytes, float64(m.Recv-m.Send)/1e3)
	}
	trace.WriteText(os.Stdout, t)
	// Output:
	// client → web: 512 bytes, 200 µs in flight
	// web → client: 2048 bytes, 150 µs in flight
	// # wap5 message trace v1
	// 1700000000.000100000 client 10.0.0.1:40001 1700000000.000300000 web 10.0.0.2:80 512 id=1
	// 1700000000.004000000 web 10.0.0.2:80 1700000000.004150000 client 10.0.0.1:40001 2048 id=2
}
