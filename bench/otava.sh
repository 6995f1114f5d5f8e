#!/usr/bin/env bash
# Apache Otava's change points on seeded series (steps, two steps, a late step, none; normal,
# lognormal and spiky noise; 30-200 points), written to crates/stats/tests/otava.json, which
# the history crate's test compares its own change points with (the same within one point).
# Run by hand after changing the method: OTAVA_PY=path/to/otava-venv/bin/python bash bench/otava.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${OTAVA_PY:-python3}
"$PY" -c 'import otava' 2>/dev/null || {
  echo "$PY cannot import otava: set OTAVA_PY to the Python of Otava's virtualenv (install-peers.sh makes one)" >&2
  exit 1
}
version=$("$PY" -c 'import importlib.metadata as m; print(m.version("apache-otava"))')
"$PY" bench/otava/fixtures.py "apache-otava $version" > crates/stats/tests/otava.json
count=$("$PY" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["cases"]))' crates/stats/tests/otava.json)
echo "wrote crates/stats/tests/otava.json (apache-otava $version, $count series)" >&2
