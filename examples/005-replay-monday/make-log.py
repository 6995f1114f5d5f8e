#!/usr/bin/env python3
"""Writes monday.log: a bursty mixed morning compressed into 4 minutes of a combined-format
access log (nginx's, with $msec first), deterministic (seeded). The base load climbs from 8 to 24
requests a second, with a burst of three times the load for 10 s every minute (a newsletter,
a cron job), over a mix of routes: news pages, searches, API reads and static files.
Run from this folder: python3 make-log.py"""
import math
import random

rng = random.Random(2026)
T0 = 1795510800.0  # 2026-11-24T09:00:00Z
MIX = [("/news/%d", 45), ("/search?q=%s", 10), ("/api/items/%d", 25), ("/static/app.%s.js", 20)]
WORDS = ["load", "lab", "replay", "monday", "nginx", "origin", "p99", "burst"]
lines = []
for second in range(240):
    base = 8 + 16 * second / 240
    burst = 3 if second % 60 < 10 else 1
    n = int(rng.gauss(base * burst, math.sqrt(base * burst)))
    for _ in range(max(n, 0)):
        t = T0 + second + rng.random()
        r = rng.random() * 100
        for pattern, weight in MIX:
            if r < weight:
                break
            r -= weight
        if "%d" in pattern:
            path = pattern % rng.randint(1, 500)
        else:
            path = pattern % rng.choice(WORDS)
        status, size = 200, rng.randint(300, 40000)
        lines.append((t, path, status, size))
lines.sort()
with open("monday.log", "w") as f:
    for t, path, status, size in lines:
        stamp = "24/Nov/2026:09:%02d:%02d +0000" % ((int(t - T0) // 60), int(t - T0) % 60)
        f.write('%.3f 10.%d.%d.%d - - [%s] "GET %s HTTP/1.1" %d %d "-" "Mozilla/5.0 (Monday)"\n' % (
            t, rng.randint(0, 255), rng.randint(0, 255), rng.randint(1, 254), stamp, path, status, size))
print("monday.log: %d requests" % len(lines))
