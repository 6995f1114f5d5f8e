#!/usr/bin/env bash
# Which commit made it slower, from scratch: a git repository of a small Go service in a
# temporary folder, twelve commits after the first (one does not build, one does 30% more work
# per request), then `loadlab history bisect` between the first and the last.
#
#   bash examples/007-which-commit/run.sh            # LOADLAB=path to use another build
#
# Needs git and go. Takes about a minute; leaves the repository, the history and bisect.md in
# the folder it names at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
loadlab=${LOADLAB:-}
if [ -z "$loadlab" ]; then
  (cd "$here/../.." && cargo build --release -q)
  loadlab=$here/../../target/release/loadlab
fi
work=$(mktemp -d /tmp/loadlab-which-commit.XXXXXX)
repo=$work/repo
mkdir -p "$repo"
cp "$here"/svc/{main.go,work.go,go.mod,plan.toml} "$repo"
cd "$repo"
git init -q -b main
git config user.email ci@example.com
git config user.name CI
echo svc > .gitignore
commit() { git add -A; git commit -q -m "$1"; }
echo "svc" > README; commit "svc: a service that hashes"
good=$(git rev-parse HEAD)
for i in 1 2 3 4 5; do echo "svc, revision $i" > README; commit "README: revision $i"; done
sed -i 's/func main() {/func main( {/' main.go; commit "main: a typo that does not build"
cp "$here/svc/main.go" main.go; commit "main: builds again"
sed -i 's/rounds = 10000/rounds = 13000/' work.go; commit "work: 30% more rounds"
for i in 9 10 11 12; do echo "svc, revision $i" > README; commit "README: revision $i"; done

"$loadlab" history bisect plan.toml --good "$good" --bad HEAD --build "go build -o svc ." \
  --history "$work/history.db" --out "$work/bisect" || status=$?
echo
echo "the repository, the history and the labs: $work (bisect.md in $work/bisect)"
exit "${status:-0}"
