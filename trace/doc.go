// Package trace is the message-trace model at the centre of wap5: messages
// with send and receive times between nodes, the node and endpoint tables,
// the paths that inference algorithms return, and readers and writers for the
// text, binary and Project 5 forms. It imports nothing else of wap5.
package trace
