"""Shared by the comparison scripts (anchors, memcompare): run commands, pick medians out of oslab's
JSON, interleave rounds of oslab and another tool, and print ratios with their spread."""
import json, statistics, subprocess, sys


def sh(cmd, stdout_only=False):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[:400]}")
    return r.stdout if stdout_only else r.stdout + r.stderr


def oslab_json(oslab, args):
    """Runs `oslab run ... --json` and returns its measurements."""
    return json.loads(sh([oslab, "run", "--json", *args], stdout_only=True))["measurements"]


def median_of(ms, probe, metric, **params):
    for m in ms:
        if m["probe"] == probe and m["metric"] == metric and all(m["params"].get(k) == v for k, v in params.items()):
            return m["summary"]["median"] if m.get("summary") else None
    return None


def interleave(rounds, ours, theirs):
    """Alternates ours() and theirs() (dicts quantity -> value) for `rounds`; returns per quantity
    the list of (ours, theirs) pairs."""
    pairs = {}
    for r in range(rounds):
        a, b = ours(), theirs()
        for k in a:
            if a[k] and b.get(k):
                pairs.setdefault(k, []).append((a[k], b[k]))
        print(f"round {r + 1}/{rounds}: " + ", ".join(f"{k} {v[-1][0] / v[-1][1]:.2f}" for k, v in pairs.items()),
              file=sys.stderr)
    return pairs


def report(pairs, unit):
    """Prints median values, the median ratio oslab/other and its range."""
    print(f"{'quantity':22} {'oslab ' + unit:>12} {'other ' + unit:>12} {'ratio':>7}  {'ratio min-max':>13}  rounds")
    for k, ps in pairs.items():
        rs = [a / b for a, b in ps]
        o = statistics.median(a for a, _ in ps)
        t = statistics.median(b for _, b in ps)
        print(f"{k:22} {o:12.2f} {t:12.2f} {statistics.median(rs):7.3f}  {min(rs):6.3f}-{max(rs):<6.3f}  {len(rs)}")
