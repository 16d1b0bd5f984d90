#!/bin/bash
# bench/memtrace-build.sh OUT: builds wap5 with the memtrace marks (build
# tag memtrace, package internal/memtrace) into OUT, from a copy of this
# checkout (which stays as it is): `WAP5_MEMTRACE=1 OUT link ...` then
# prints, at every step of wap5 link, the RSS, its peak, the memory
# faulted in afresh so far (rise: the sum of the RSS's rises, sampled
# every 0.5 ms) and given back (fall), the Go heap's accounts and what
# hugemem keeps (WAP5_MEMTRACE_SMAPS=DIR also copies /proc/self/smaps
# there at each step's first mark).
set -euo pipefail
out=$(realpath -m "$1")
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src"/go.mod "$src"/go.sum "$src"/cmd "$src"/internal "$src"/linking "$src"/trace "$tmp"/
for d in "$src"/*/; do [ -e "$tmp/$(basename "$d")" ] || ln -s "$d" "$tmp/$(basename "$d")"; done
python3 - "$tmp" <<'PY'
import sys
root = sys.argv[1]
def sub(path, old, new):
    p = root + '/' + path
    s = open(p).read()
    assert old in s, (path, old)
    open(p, 'w').write(s.replace(old, new, 1))
sub('cmd/wap5/link.go', '\t\thugemem.Reserve(linkReserve(path))\n', '\t\tmemtrace.Mark("start")\n\t\thugemem.Reserve(linkReserve(path))\n\t\tmemtrace.Mark("reserved")\n')
sub('cmd/wap5/link.go', '\t\tif !c.Bool("no-skew") {\n', '\t\tmemtrace.Mark("read")\n\t\tif !c.Bool("no-skew") {\n')
sub('cmd/wap5/link.go', '\t\t\trestore()\n\t\t}\n', '\t\t\trestore()\n\t\t\tmemtrace.Mark("skew")\n\t\t}\n')
sub('cmd/wap5/link.go', '\tif pw != nil {\n\t\treturn pw.Close(res.Warnings)', '\tmemtrace.Mark("linked")\n\tif pw != nil {\n\t\tdefer memtrace.Mark("written")\n\t\treturn pw.Close(res.Warnings)')
sub('cmd/wap5/link.go', 'import (\n', 'import (\n\t"wap5/internal/memtrace"\n')
sub('linking/phase.go', 'import "fmt"', 'import (\n\t"fmt"\n\n\t"wap5/internal/memtrace"\n)')
sub('linking/phase.go', 'func phase(name string) {\n', 'func phase(name string) {\n\tmemtrace.Mark(name)\n')
sub('linking/phase.go', 'func phaseOf(name string, p int) {\n', 'func phaseOf(name string, p int) {\n\tmemtrace.Mark(fmt.Sprintf("%s p%d", name, p))\n')
PY
(cd "$tmp" && go build -tags memtrace -o "$out" ./cmd/wap5)
