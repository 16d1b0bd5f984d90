// Command wap5 is a black-box performance debugger for distributed systems.
//
// Each subcommand lives in its own file and registers itself with register;
// the command functions only parse flags and call library packages.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// run executes the CLI with the given arguments and streams and returns the
// process exit status: 0 success, 1 failure, 2 bad usage. Errors are printed
// as "wap5: <what went wrong>".
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdin, stdout, stderr)
	if err := app.Run(args); err != nil {
		// An exitStatus passes on a traced command's own status: nothing to add.
		if _, ok := err.(exitStatus); !ok {
			fmt.Fprintf(stderr, "wap5: %v\n", err)
		}
		return exitCode(err)
	}
	return 0
}
