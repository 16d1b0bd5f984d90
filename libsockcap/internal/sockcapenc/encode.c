/* The library's encoder, compiled into this test-only cgo package. */
#include "../../c/encode.c"
