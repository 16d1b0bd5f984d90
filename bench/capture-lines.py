#!/usr/bin/env python3
# capture-lines.py — the 4 KiB pages and 64-byte cache lines a preloaded
# library's calls touch between two socket system calls (with PTI and no PCID
# every system call flushes the TLB: each page is a page walk, and the
# kernel's path evicts most lines from L1). From a valgrind lackey trace:
#
#   cc -O2 -o cb bench/capture-bench.c
#   cc ... -DSC_BENCH_ANY_TIGHT -DSC_BENCH_TSC_SHIFT=8 -o lib.so libsockcap/c/*.c
#       (the TSC clock path under valgrind, and dt at its native size: without the
#       shift valgrind's slowness makes dt 3-byte varints, lines no native run touches)
#   SOCKCAP_DIR=/tmp/l LD_PRELOAD=$PWD/lib.so valgrind --tool=lackey --trace-mem=yes \
#       --trace-syscalls=yes --log-file=trace.txt ./cb pair 600
#   bench/capture-lines.py trace.txt lib.so
#
# Prints, for the segments that follow a sendto and a recvfrom system call
# (medians of the last 100 of each), the pages and lines touched, by region:
# the library's code and data, other (its TLS, next to libc's thread block),
# the log chunk, the stack, the program, libc. Under valgrind the clock is a
# system call (not counted as a boundary) and the thread re-anchors its TSC
# clock at every record, so the segment after recvfrom, which reads the clock,
# also holds sc_now_anchor's code; the segment after sendto does not.
import collections
import re
import sys

log = sys.argv[1]; libname = sys.argv[2].split("/")[-1]
lines = open(log, errors='replace').read().split('\n')
regions = []; fdname = {}; last_open = None
for l in lines:
    if 'sys_openat' in l:
        m = re.search(r'\((/[^)]*)\)', l); last_open = m.group(1) if m else None
        m2 = re.search(r'Success\(0x([0-9a-f]+)\)', l)
        if m2 and last_open: fdname[int(m2.group(1),16)] = last_open; last_open=None
    elif l.startswith('SYSCALL') and '... [async] --> Success(0x' in l and last_open:
        m2 = re.search(r'Success\(0x([0-9a-f]+)\)', l); fdname[int(m2.group(1),16)] = last_open; last_open=None
    if 'sys_mmap' in l and 'Success' in l:
        m = re.search(r'sys_mmap \( (0x[0-9a-f]+), (\d+), (\d+), (\d+), (\d+), (\d+) \).*Success\(0x([0-9a-f]+)\)', l)
        if m:
            ln, prot, fd = int(m.group(2)), int(m.group(3)), int(m.group(5))
            base = int(m.group(7), 16)
            name = fdname.get(fd, 'anon') if fd != 4294967295 else 'anon'
            regions.append((base, base + ln, name.split('/')[-1], prot))
libs = [r for r in regions if r[2] == libname]
lib_lo = min(r[0] for r in libs); lib_hi = max(r[1] for r in libs)
# the library's .bss continues in an anonymous mapping right after its file mappings
for r in regions:
    if r[2] == 'anon' and r[0] == lib_hi: lib_hi = r[1]
def cls(a):
    if lib_lo <= a < lib_hi:
        for s, e, n, p in libs:
            if s <= a < e and p == 5: return 'lib-code'
        return 'lib-data'
    for s, e, n, p in regions:
        if s <= a < e:
            if n.endswith('.sclog'): return 'chunk'
            if n == 'libc.so.6': return 'libc'
    if a >= 0x1ff0000000: return 'stack'
    if a < 0x1000000: return 'exe'
    return 'other'
segs = []; cur = []; name = None
for l in lines:
    if l.startswith('SYSCALL'):
        if 'sys_sendto' in l or 'sys_recvfrom' in l:
            if '...' in l.split(')', 1)[1][:10]: continue
            segs.append((name, cur)); cur = []
            name = 'sendto' if 'sys_sendto' in l else 'recvfrom'
        continue
    if len(l) > 3 and l[0] in ' IM' and l[1] in ' ILSM' and ',' in l:
        try:
            a = int(l[3:].split(',')[0], 16)
        except ValueError:
            continue
        cur.append(a)
tail = segs[-201:-1]
for nm in ('sendto', 'recvfrom'):
    ss = [c for n, c in tail if n == nm]
    if not ss: continue
    rows = []
    for c in ss:
        pages = collections.defaultdict(set); lns = collections.defaultdict(set)
        for a in c:
            k = cls(a); pages[k].add(a >> 12); lns[k].add(a >> 6)
        rows.append((pages, lns))
    def med(xs): xs = sorted(xs); return xs[len(xs)//2]
    keys = ['lib-code', 'lib-data', 'other', 'chunk', 'stack', 'exe', 'libc']
    tp = med([sum(len(v) for v in p.values()) for p, _ in rows]); tl = med([sum(len(v) for v in l.values()) for _, l in rows])
    print('after %-8s pages %2d lines %3d | ' % (nm, tp, tl) + ' '.join('%s %d/%d' % (k, med([len(p[k]) for p, _ in rows]), med([len(l[k]) for _, l in rows])) for k in keys))
