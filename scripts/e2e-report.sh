#!/usr/bin/env bash
# e2e-report.sh — run the end-to-end tests (package e2e) N times on the real
# namespaced testbed and summarise, per pattern node, how far wap5 link's node
# delays (and wap5 nest's call delays) are from the servers' own means, and how
# many paths wap5 nest puts in the true call trees, with and without the
# same-thread hint (the tables of docs/e2e.md).
#
#   sudo scripts/e2e-report.sh [N]      (default 5; needs root and make)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-5}
cd "$root"
make -s bin/wap5 bin/libsockcap.so
logs=$(mktemp -d /tmp/e2e-report.XXXXXX)
trap 'rm -rf "$logs"' EXIT
fails=0
for i in $(seq "$n"); do
	if ! WAP5_BIN="$root/bin" go test -count=1 -v -run 'TestLink$|TestNest$|TestNestActors$' ./e2e >"$logs/run$i.log" 2>&1; then
		fails=$((fails + 1))
		grep -E 'workload made|limit ±10|not among|not more frequent|FAIL' "$logs/run$i.log" | sed "s/^/run $i: /" >&2 || true
	fi
done
echo "<!-- scripts/e2e-report.sh $n on $(date -u +%F) ($(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')) -->"
echo "runs: $n, failed: $fails"
python3 - "$logs" <<'PY'
import collections, glob, re, sys
rx = re.compile(r'e2e_test.go:\d+: (.+?)\s{2,}(.+?)\s{2,}wap5 (link|nest) ([0-9.]+) ms, servers ([0-9.]+) ms.*?([+-][0-9.]+)%')
rows = collections.OrderedDict()
trees = collections.defaultdict(list)
insts = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + '/run*.log')):
    sub = None
    for l in open(f):
        m = re.search(r'=== RUN\s+(\S+)', l)
        if m:
            sub = m.group(1)
        m = rx.search(l)
        if m:
            rows.setdefault((sub, m.group(3), m.group(1).strip(), m.group(2).strip()), []).append(
                (float(m.group(4)), float(m.group(5)), float(m.group(6))))
        m = re.search(r'(clients=\d+, \w+ granularity): (\d+) of (\d+) paths', l)
        if m:
            trees[m.group(1)].append(int(m.group(2)) / int(m.group(3)))
        m = re.search(r'(clients=(\d+), \w+ granularity): \d+ instances, ([0-9.]+)%', l)
        if m:
            hint = '' if m.group(2) == '1' else ' (same-thread hint off)'
            insts['wap5 nest, ' + m.group(1) + hint].append(float(m.group(3)) / 100)
        m = re.search(r'clients=\d+: ([0-9.]+)% of the instances exactly', l)
        if m and sub:
            insts['wap5 nest with actors, ' + sub.split('/', 1)[1]].append(float(m.group(1)) / 100)
        m = re.search(r'wap5 link: \d+ instances, ([0-9.]+)%', l)
        if m and sub:
            insts['wap5 link, ' + sub.split('/')[-1]].append(float(m.group(1)) / 100)
print()
print('| test | tool | path | node (servers\' interval) | tool ms (median) | servers ms (median) | error median | error min … max |')
print('|---|---|---|---|---|---|---|---|')
med = lambda v: sorted(v)[len(v) // 2]
for (sub, tool, path, node), v in rows.items():
    print('| %s | %s | %s | %s | %.3f | %.3f | %+.1f%% | %+.1f%% … %+.1f%% |' % (
        sub, tool, path, node, med([x[0] for x in v]), med([x[1] for x in v]), med([x[2] for x in v]),
        min(x[2] for x in v), max(x[2] for x in v)))
print()
print('| wap5 nest, no kind=/call=, same-thread hint off with 3 clients | paths in the true call trees: median | min … max |')
print('|---|---|---|')
for k, v in trees.items():
    print('| %s | %.1f%% | %.1f%% … %.1f%% |' % (k, 100 * med(v), 100 * min(v), 100 * max(v)))
print()
print('| instances exactly their request\'s path | median | min … max |')
print('|---|---|---|')
for k, v in sorted(insts.items()):
    print('| %s | %.1f%% | %.1f%% … %.1f%% |' % (k, 100 * med(v), 100 * min(v), 100 * max(v)))
PY
