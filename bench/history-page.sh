#!/usr/bin/env bash
# history.html at team scale: LABS labs (default 1,000) of one plan, 50 series (5 load points x
# 10 series, a +10% step in p99 nine tenths in), written by `history show --out` and drawn by
# headless Chromium. Prints the page's size, the time to write it (one core), and how long its
# script took to draw every chart (the page's data-draw-ms), three loads.
#
#   [LABS=1000] bash bench/history-page.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
LABS=${LABS:-1000}
need_tools taskset /usr/bin/time chromium
build_loadlab
cargo build --profile dist -q -p history --example fill
OUT=$(mktemp -d /tmp/loadlab-page.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
"$PWD/target/dist/examples/fill" "$OUT/history.db" "$LABS" 2>/dev/null
/usr/bin/time -f "%e %M" -o "$OUT/time" taskset -c 0 "$LOADLAB" history show --history "$OUT/history.db" \
  --out "$OUT/pages" >/dev/null 2>&1
read -r wall rss < <(tail -1 "$OUT/time")
echo "$LABS labs x 50 series: history.html $(wc -c < "$OUT/pages/history.html") bytes, written in $wall s ($((rss / 1024)) MB)"
for i in 1 2 3; do
  chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=10000 --user-data-dir="$OUT/profile" \
    --dump-dom "file://$OUT/pages/history.html" 2>/dev/null |
    grep -o 'data-charts-drawn="[0-9]*"\|data-draw-ms="[0-9]*"\|data-errors="[^"]*"' | tr '\n' ' '
  echo
done
