package linking_test

import (
	"fmt"
	"strings"

	"wap5/linking"
	"wap5/trace"
)

// A client calls a web server, which calls a database and replies.
func ExampleLink() {
	const text = `# wap5 message trace v1
1.000 client 10.0.0.1:5000 1.001 web 10.0.0.2:80 200
1.011 web 10.0.0.2:6000 1.012 db 10.0.0.3:5432 100
1.042 db 10.0.0.3:5432 1.043 web 10.0.0.2:6000 900
1.045 web 10.0.0.2:80 1.046 client 10.0.0.1:5000 1000
`
	t, err := trace.Read(strings.NewReader(text), "example")
	if err != nil {
		panic(err)
	}
	res, err := linking.Link(t, linking.Options{})
	if err != nil {
		panic(err)
	}
	for _, p := range res.Patterns {
		fmt.Printf("#%d count %d expected %.1f\n", p.Rank, p.Count, p.Expected)
		p.Root.Walk(func(s *trace.Step, depth int) {
			fmt.Printf("%s%s → %s", strings.Repeat("  ", depth), s.From, s.To)
			if s.Wait.Known() {
				fmt.Printf("  node delay %.0f ms", s.Wait.Mean*1e3)
			}
			fmt.Println()
		})
	}
	// Output:
	// #1 count 1 expected 1.0
	// client → web
	//   web → db  node delay 10 ms
	//     db → web  node delay 30 ms
	//       web → client  node delay 2 ms
}
