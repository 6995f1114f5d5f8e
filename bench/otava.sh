#!/usr/bin/env bash
# Apache Otava's change points on seeded series (steps, two steps, a late step, none; normal,
# lognormal and spiky noise; 30-200 points), written to crates/history/tests/otava.json, which
# the history crate's test compares its own change points with (the same within one point).
# Run by hand after changing the method: bash bench/otava.sh   (Otava: ../shared/tools/install-peers.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${OTAVA_PY:-/tmp/otava/bin/python}
[ -x "$PY" ] || { echo "missing Otava's Python at $PY: run ../shared/tools/install-peers.sh or set OTAVA_PY" >&2; exit 1; }
version=$("$PY" -c 'import importlib.metadata as m; print(m.version("apache-otava"))')
"$PY" bench/otava/fixtures.py "apache-otava $version" > crates/history/tests/otava.json
echo "wrote crates/history/tests/otava.json (apache-otava $version, $(grep -c '"name"' crates/history/tests/otava.json) series)" >&2
