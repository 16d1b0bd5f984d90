/* The C library's own record encoder, compiled into the generator. */
#include "../../libsockcap/c/encode.c"
