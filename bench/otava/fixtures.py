"""Series and Apache Otava's change points on them, for the history crate's test that its method
agrees with Otava's (crates/stats/tests/otava.json). Run by bench/otava.sh with Otava's Python.

Each series is seeded, so the file is the same on every run of the same Otava version."""
import json
import random
import sys

from otava.analysis import compute_change_points


def series(seed, n, levels, noise, kind="normal"):
    """n points; levels: [(from_index, level)]; noise: relative standard deviation."""
    rng = random.Random(seed)
    out, level = [], levels[0][1]
    for i in range(n):
        for at, value in levels:
            if i == at:
                level = value
        if kind == "lognormal":
            out.append(level * rng.lognormvariate(0, noise))
        elif kind == "spiky":
            out.append(level * (1 + rng.gauss(0, noise)) * (3 if rng.random() < 0.03 else 1))
        else:
            out.append(level * (1 + rng.gauss(0, noise)))
    return out


cases = []
seed = 1
for n in (30, 60, 120, 200):
    for noise in (0.01, 0.03, 0.08):
        for kind in ("normal", "lognormal", "spiky"):
            shapes = {
                "flat": [(0, 100.0)],
                "step": [(0, 100.0), (n // 2, 110.0)],
                "two steps": [(0, 100.0), (n // 3, 120.0), (2 * n // 3, 95.0)],
                "late step": [(0, 100.0), (n - 8, 115.0)],
            }
            for name, levels in shapes.items():
                values = series(seed, n, levels, noise, kind)
                cps, _ = compute_change_points(list(values), window_len=50, max_pvalue=0.001, min_magnitude=0.0)
                cases.append({
                    "name": f"{name}, {n} points, {noise:.0%} {kind} noise (seed {seed})",
                    "values": values,
                    "otava": [int(cp.index) for cp in cps],
                })
                seed += 1
json.dump({"otava": sys.argv[1] if len(sys.argv) > 1 else "", "window": 50, "max_pvalue": 0.001, "cases": cases},
          sys.stdout)
