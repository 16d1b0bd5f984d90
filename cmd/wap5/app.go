package main

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/urfave/cli/v2"
)

// commandFactories holds one constructor per subcommand; each file adds its
// own in an init function so that commands can be written independently.
var commandFactories []func() *cli.Command

func register(f func() *cli.Command) { commandFactories = append(commandFactories, f) }

// usageError marks a bad invocation (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// exitStatus carries a specific exit status without a message (wap5 run
// returns the traced command's own status this way).
type exitStatus struct{ code int }

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	var s exitStatus
	if errors.As(err, &s) {
		return s.code
	}
	return 1
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	var cmds []*cli.Command
	for _, f := range commandFactories {
		cmds = append(cmds, f())
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	app := &cli.App{
		Name:      "wap5",
		Usage:     "black-box performance debugger for distributed systems",
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		Commands:  cmds,
		// Errors are printed once by run, with the "wap5: " prefix.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err.Error()}
		},
		HideHelpCommand: true,
	}
	for _, c := range cmds {
		if c.OnUsageError == nil {
			c.OnUsageError = app.OnUsageError
		}
	}
	return app
}
