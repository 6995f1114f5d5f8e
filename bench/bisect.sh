#!/usr/bin/env bash
# `history bisect` on real services: a git repository of COMMITS commits after the first, the
# one at AT doing CHANGE percent more work per request; TRIALS bisects, each in a fresh
# repository and history; for each, whether the right commit was named and how many labs ran.
#
#   SERVER=go|python COMMITS=15 AT=9 CHANGE=30 TRIALS=3 [OUT=dir] [LOADLAB=bin] bash bench/bisect.sh
#
# go: examples/007-which-commit's service (SHA-256 rounds per request, built with go build).
# python: an http.server that hashes per request (no build: --build true).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
SERVER=${SERVER:-go} COMMITS=${COMMITS:-15} AT=${AT:-9} CHANGE=${CHANGE:-30} TRIALS=${TRIALS:-3}
need_tools git python3
[ "$SERVER" != go ] || need_tools go
[ -n "${LOADLAB:-}" ] || build_loadlab  # LOADLAB=path: another build
OUT=${OUT:-$(mktemp -d /tmp/loadlab-bisect-bench.XXXXXX)}
mkdir -p "$OUT"
rounds=10000 slower=$((10000 * (100 + CHANGE) / 100))

make_repo() {
  local repo=$1
  mkdir -p "$repo"
  cd "$repo"
  git init -q -b main
  git config user.email ci@example.com
  git config user.name CI
  if [ "$SERVER" = go ]; then
    cp "$OLDPWD"/examples/007-which-commit/svc/{main.go,work.go,go.mod,plan.toml} .
    echo svc > .gitignore
    build="go build -o svc ."
  else
    cat > server.py <<'PY'
import hashlib, http.server, sys
from work import ROUNDS
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        h = b"x" * 32
        for _ in range(ROUNDS // 4):
            h = hashlib.sha256(h).digest()
        self.send_response(200); self.send_header("Content-Length", "8"); self.end_headers()
        self.wfile.write(h[:8])
    def log_message(self, *a): pass
host, port = sys.argv[1].rsplit(":", 1)
http.server.ThreadingHTTPServer((host, int(port)), H).serve_forever()
PY
    echo "ROUNDS = 10000" > work.py
    sed 's|start = \["./svc", "127.0.0.1:{port}"\]|start = ["python3", "server.py", "127.0.0.1:{port}"]|' \
      "$OLDPWD"/examples/007-which-commit/svc/plan.toml > plan.toml
    printf '__pycache__\n' > .gitignore
    build="true"
  fi
  echo "svc" > README; git add -A; git commit -q -m "first"
  for i in $(seq 1 "$COMMITS"); do
    if [ "$i" = "$AT" ]; then
      sed -i "s/$rounds/$slower/" work.go work.py 2>/dev/null || true
      git add -A; git commit -q -m "slower: $CHANGE% more work"
    else
      echo "revision $i" > README; git add -A; git commit -q -m "revision $i"
    fi
  done
  cd "$OLDPWD"
}

echo "trial,named,right,labs,seconds" > "$OUT/trials.csv"
for t in $(seq 1 "$TRIALS"); do
  repo=$OUT/trial$t/repo
  make_repo "$repo"
  [ "$SERVER" = go ] && build="go build -o svc ." || build="true"
  want=$(git -C "$repo" log --format=%h%x09%s | awk -F'\t' '$2 ~ /^slower/ {print $1}')
  start=$(date +%s)
  line=$(cd "$repo" && "$LOADLAB" history bisect plan.toml --good HEAD~"$COMMITS" --bad HEAD --build "$build" \
    --history "$OUT/trial$t/history.db" --out "$OUT/trial$t/bisect" 2>"$OUT/trial$t/stderr" || true)
  took=$(( $(date +%s) - start ))
  labs=$(grep -o '[0-9]* labs run' "$OUT/trial$t/bisect/bisect.md" | grep -o '^[0-9]*' || echo "?")
  named=$(echo "$line" | sed -n 's/^first slow commit: \([0-9a-f]*\).*/\1/p')
  right=0; [ -n "$named" ] && [ "${named:0:7}" = "${want:0:7}" ] && right=1
  echo "$t,${named:-none},$right,$labs,$took" >> "$OUT/trials.csv"
  echo "trial $t: $line ($labs labs, ${took}s)"
done
echo "$SERVER +$CHANGE%, $COMMITS commits: $(awk -F, 'NR>1 {r+=$3; n++} END {print r " of " n}' "$OUT/trials.csv") right; $OUT/trials.csv"
