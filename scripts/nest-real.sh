#!/usr/bin/env bash
# nest-real.sh — wap5 nest on the real namespaced system with concurrent
# clients, with and without the per-message actors (sa=/da=), as a markdown
# section on stdout (docs/project5.md §9; scripts/experiments-project5.sh
# calls it). Runs the e2e tests and reads what they log:
#   - TestNestRecorded on the recorded runs in e2e/testdata/nest-recorded
#     (no root needed);
#   - as root, RUNS_LIVE (default 5) live testbed runs of TestNestActors
#     (three concurrent client processes, host and process granularity), each
#     on a fresh testbed, which also log what the same-thread hint would
#     give wap5 link.
# WAP5_BIN: a directory with wap5 and libsockcap.so (default: built into
# $OUT, default /tmp/wap5-nest-real).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/wap5-nest-real}
RUNS_LIVE=${RUNS_LIVE:-5}
mkdir -p "$OUT"
if [ -z "${WAP5_BIN:-}" ]; then
	go build -o "$OUT/wap5" ./cmd/wap5
	cc=$(go env CC)
	$cc -O2 -g -fPIC -shared -fvisibility=hidden -Wl,--version-script=libsockcap/c/exports.map \
		-o "$OUT/libsockcap.so" libsockcap/c/*.c -ldl -lpthread
	WAP5_BIN=$OUT
fi
export WAP5_BIN

# rows TEST LABEL: one table row per subtest from the test's -v log.
rows() {
	awk -v label="$2" '
	/^=== (RUN|NAME|CONT) / { st = $3; sub(/^[^\/]*\//, "", st) }
	/% of the instances exactly their request/ { with[st] = $0; sub(/.*: /, "", with[st]); sub(/% .*/, "", with[st]); order[++n] = st }
	/without actors/ { w = $0; sub(/.*actors \(--actor-min 2\) /, "", w); sub(/% .*/, "", w); without[st] = w }
	/actors at .*used:/ { a = $0; sub(/.*actors at /, "", a); used[st] = used[st] (used[st] ? "; " : "") a }
	/wap5 link, clients/ {
		l = $0; sub(/.*instances, /, "", l)
		p = l; sub(/ .*/, "", p)
		w = l; sub(/.*path; /, "", w); sub(/ wrong.*/, "", w)
		r = l; sub(/.*hint rejects /, "", r); sub(/ .*/, "", r)
		link[st] = p "; " w " wrong, " r " rejected"
	}
	/^--- FAIL/ { fail = 1 }
	END {
		for (i = 1; i <= n; i++) {
			s = order[i]
			if (seen[s]++) continue
			printf "| %s | %s | %s%% | %s%% | %s |\n", label, s, with[s], without[s], (link[s] ? link[s] : "-")
		}
		if (fail) print "| " label " | **a test failed** | | | |"
	}'
}

echo "## 9. The real system with concurrent clients (nesting with actors)"
echo
echo "\`scripts/testbed.sh --front --clients 3\`: three client processes at once against a forking"
echo "server (a process per connection), a forking front server whose children call a threaded"
echo "server (a thread per connection) that calls a Unix-socket helper (a thread per connection)."
echo "\`wap5 nest\` runs on the reconciled trace with kind=/call= removed (call pairs from the"
echo "connections). Exact = the share of path instances that are exactly their request's path"
echo "(sizes follow from the request's, so a swapped message shows). \"Without actors\" is the same"
echo "trace with \`--actor-min 2\` (Project 5's nesting). Linking column: \`wap5 link\` on the same"
echo "trace, and how many of its wrong instances the same-thread hint would reject (a message leaving"
echo "a node from another thread than the one that received its parent); linking does not use actors."
echo
echo "| run | granularity | nest exact, with actors | without actors | wap5 link: exact; wrong instances, of them rejected by the hint |"
echo "|---|---|---|---|---|"
go test -count=1 -run 'TestNestRecorded' -v ./e2e 2>&1 | rows TestNestRecorded recorded
if [ "$(id -u)" = 0 ]; then
	for i in $(seq "$RUNS_LIVE"); do
		go test -count=1 -run 'TestNestActors' -v ./e2e 2>&1 | rows TestNestActors "live $i"
	done
else
	echo "| live | (needs root) | | | |"
fi
echo
echo "The hint is used only where the data shows it: per node, of the calls with one candidate parent"
echo "(both actors known), at least 99 % (\`--actor-min\`) must leave from the thread that received that"
echo "candidate, and that agreement must be beyond chance: at most 10⁻⁶ (\`--actor-chance\`) probable if"
echo "sending and receiving threads were unrelated (their agreement rate then is the sum over threads"
echo "of the share of calls each sent times the share each received — 100 % for an event loop's single"
echo "thread, which therefore never qualifies). A call none of whose candidates its thread received"
echo "keeps them all."
echo "\`nesting.TestActors\` covers a thread-per-request server (exact with actors, 26 %"
echo "without), an event loop and a hand-off to another thread (not used: results identical to"
echo "Project 5's), too few samples, and no actors at all (gen traces, pcaps: unchanged)."
echo
echo "What nest learnt on the recorded run (stderr of \`wap5 nest\`):"
echo
echo '```'
go test -count=1 -run 'TestNestRecorded/.*/trace.txt' -v ./e2e 2>&1 | sed -n 's/.*\(wap5: nest: .*\)/\1/p' | head -4
echo '```'
