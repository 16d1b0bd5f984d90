// Package hugemem asks for transparent huge pages behind large, freshly
// made slices: the page faults of first touching tens of megabytes are a
// large part of what a short command costs on a virtual machine. Reserve
// does the same for the heap as a whole (what the runtime and libraries
// allocate). Keep and Spare let later buffers reuse memory that Map handed
// out and was given back, touched already, instead of fresh memory.
package hugemem
