#!/usr/bin/env python3
"""bench/mem16-summary.py FILE...: medians of bench/mem16-pairs.sh output
(user, sys, user+sys, peak RSS MB, thp faults, minor faults) per side,
and the median of the per-pair ratios new/old of user+sys."""
import statistics as st
import sys

for path in sys.argv[1:]:
    runs = {"old": [], "new": []}
    for line in open(path):
        f = line.split()
        if len(f) < 9 or f[0] not in runs:
            continue
        thp, user, sysc, rss, minflt = int(f[2]), float(f[4]), float(f[5]), int(f[6]), int(f[7])
        runs[f[0]].append((user, sysc, user + sysc, rss / 1024, thp, minflt))
    print(path)
    for side in ("old", "new"):
        r = runs[side]
        if not r:
            continue
        med = [st.median(x[i] for x in r) for i in range(6)]
        print(f"  {side}: n={len(r)} user {med[0]:.2f} sys {med[1]:.2f} cpu {med[2]:.2f} peak {med[3]:.0f} MB thp {med[4]:.0f} minflt {med[5]:.0f}")
    n = min(len(runs["old"]), len(runs["new"]))
    if n:
        ratios = [runs["new"][i][2] / runs["old"][i][2] for i in range(n)]
        sysr = [runs["new"][i][1] / runs["old"][i][1] for i in range(n)]
        print(f"  pair ratio new/old cpu: median {st.median(ratios):.3f}; sys: median {st.median(sysr):.3f}")
