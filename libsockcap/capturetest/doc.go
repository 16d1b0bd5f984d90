// Package capturetest runs real programs (curl, python3, nginx, postgres,
// redis, memcached) under `wap5 run` and checks their logs exactly against
// what the workload did: connections, bytes each way per connection,
// endpoints and pids, seen from both ends. It also runs CPython's own
// socket test modules with and without the library and compares the results.
//
// The tests need bin/wap5 and bin/libsockcap.so. `make test` sets WAP5_BIN
// to the bin directory; then a missing program is a failure. Without
// WAP5_BIN they look for ../../bin and skip, with a message, when it or a
// program is missing.
package capturetest
