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


def agreeing(values):
    """(how many consecutive rounds agree within 5%, how many consecutive pairs there are)."""
    steps = list(zip(values, values[1:]))
    return sum(abs(b / a - 1) <= 0.05 for a, b in steps), len(steps)


def report(pairs, unit):
    """Prints median values, the median ratio oslab/other and its range, and for each tool how
    often one round's value agreed within 5% with the next round's: under the same host noise,
    how well each tool repeats itself."""
    print(f"{'quantity':22} {'oslab ' + unit:>12} {'other ' + unit:>12} {'ratio':>7}  {'ratio min-max':>13}  rounds"
          f"  {'repeats within 5%: oslab':>24} {'other':>6}")
    # Per tool, each distinct series counts once (two quantities may compare one oslab figure with
    # two other tools).
    series = {"oslab": {}, "other": {}}
    for k, ps in pairs.items():
        rs = [a / b for a, b in ps]
        o = statistics.median(a for a, _ in ps)
        t = statistics.median(b for _, b in ps)
        (oa, n), (ta, _) = agreeing([a for a, _ in ps]), agreeing([b for _, b in ps])
        series["oslab"][tuple(a for a, _ in ps)] = (oa, n)
        series["other"][tuple(b for _, b in ps)] = (ta, n)
        print(f"{k:22} {o:12.2f} {t:12.2f} {statistics.median(rs):7.3f}  {min(rs):6.3f}-{max(rs):<6.3f}  {len(rs):6}"
              f"  {f'{oa}/{n}':>24} {f'{ta}/{n}':>6}")
    if pairs:
        (oa, on), (ta, tn) = ([sum(c[i] for c in series[t].values()) for i in (0, 1)] for t in ("oslab", "other"))
        print(f"consecutive rounds agreeing within 5%: oslab {oa} of {on}, the other tools {ta} of {tn}")
