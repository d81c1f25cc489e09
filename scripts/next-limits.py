#!/usr/bin/env python3
"""Counts the next limits of every trial of the sweeps given (run
directories) and checks each printed one against the sweep's own trials
by the sweep's rule (sweep/servicerate.go): a rate is sustained only
where no search trial at it failed, and a limit contradicts the trials
when it lies more than 5% below the highest sustained rate or more than
5% above the lowest failing one.

    scripts/next-limits.py runs/*host5-*
"""
import json
import sys

MARGIN = 0.05
total = with_limit = inconsistent = printed = contradicted = 0
for d in sys.argv[1:]:
    with open(d + "/summary.json") as f:
        trials = json.load(f)["result"]["trials"]
    searched = [t for t in trials if t["purpose"] != "profile" and t["verdict"].get("checks")]
    failed = {t["rate"] for t in searched if not t["verdict"]["pass"]}
    sustained = max([t["rate"] for t in searched if t["verdict"]["pass"] and t["rate"] not in failed] or [0])
    lowest_fail = min(failed or [0])
    for t in trials:
        total += 1
        n = t.get("next_limit")
        if not n:
            continue
        with_limit += 1
        if n.get("inconsistent"):
            inconsistent += 1
            continue
        printed += 1
        v = n["tuples_per_s"]
        if (sustained and v < sustained * (1 - MARGIN)) or (lowest_fail and v > lowest_fail * (1 + MARGIN)):
            contradicted += 1
            print(f"contradicted: {d} trial {t['n']}: {v:.0f} tuples/s")
print(f"trials {total}, with a next limit {with_limit}, inconsistent {inconsistent}, printed {printed}, contradicted {contradicted}")
sys.exit(1 if contradicted else 0)
