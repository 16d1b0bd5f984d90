#!/usr/bin/env bash
# Byte-identity of `wap5 link` between two binaries on the large inputs:
# stdout, stderr and --instances, for the runs that take the paths the
# small scenarios of lean-identical.sh take at a size where the linker's
# memory management differs (packing, discards, DropMessages).
#   bench/lean-identical-big.sh OLD_WAP5 NEW_WAP5   # ~5 minutes on 2 cores
set -euo pipefail
old=$1 new=$2
in=${INPUTS:-/tmp/inputs}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0 n=0 VERBOSE=1
# shellcheck source=bench/identical-check.sh
. "$(dirname "$0")/identical-check.sh"
check bin.wap5.inst link --method wap5 --json --instances @INST@ "$in/codeen.bin"
check bin.wap5.hist link --method wap5 --histograms --top 5 "$in/codeen.bin"
check txt.wap5.inst link --method wap5 --json --instances @INST@ "$in/codeen.txt"
check bin.joint.inst link --json --instances @INST@ "$in/codeen.bin"
check bin.joint.hist link --histograms --top 5 "$in/codeen.bin"
check mt.wap5.inst link --method wap5 --json --instances @INST@ "$in/mt.txt"
check mt.joint.inst link --json --instances @INST@ "$in/mt.txt"
check mt.joint.text link "$in/mt.txt"
exit $rc
