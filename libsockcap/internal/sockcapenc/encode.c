/* The library's encoder, compiled into this test-only cgo package.
 * Note: the go build cache does not see changes to ../../c/encode.c; after
 * editing it, run `go test -a` or change this file (the CRC32C version). */
#include "../../c/encode.c"
/* CRC32C + datagram records */
