# Sourced by bench/aa.sh and bench/gate.sh: the plan of a lab against one real server.
#
# aa_plan DIR CHANGE: writes DIR/plan.toml for SERVER (nginx, cpu, go or origin), CHANGE percent
# slower (more work per request). Reads SERVER, REPEATS (default 1), RATES (default: the
# server's), LOADLAB (for the origin), and pin_server (a taskset prefix for the start command,
# as JSON array items, or empty).
#
# nginx: one worker serving a 10 KiB file (sub-millisecond; no CHANGE); cpu: bench/aa/burn.py
# hashing for about 2 ms a request, one at a time; go: the profiling tests' Go service hashing
# 300,000 rounds a request; origin: `loadlab origin` answering in 10 ms. DURATION and WARMUP:
# a step's (3s and 1s). PLACEMENT: the plan's (default shared; split puts the server on its own
# CPUs, where the lab's speed probe reads exactly its CPUs).
aa_plan() {
  local dir=$1 change=$2 rates start url headers=
  mkdir -p "$dir"
  url='http://127.0.0.1:{port}/'
  case $SERVER in
    nginx)
      mkdir -p "$dir/html"; head -c 10240 /dev/urandom > "$dir/html/10k"; chmod -R a+rX "$dir"
      cat > "$dir/nginx.conf.in" <<NGINX
worker_processes 1;
pid $dir/nginx-@PORT@.pid;
error_log $dir/error.log;
events { worker_connections 4096; }
http { access_log off; server { listen 127.0.0.1:@PORT@; root $dir/html; } }
NGINX
      start="[${pin_server:-}\"sh\", \"-c\", \"sed s/@PORT@/{port}/g nginx.conf.in > nginx-{port}.conf && exec nginx -c \$PWD/nginx-{port}.conf -g 'daemon off;'\"]"
      url='http://127.0.0.1:{port}/10k'
      rates="[200, 400, 600, 800, 1000, 1200]";;
    cpu)
      cp "$(dirname "${BASH_SOURCE[0]}")/burn.py" "$dir/"
      start="[${pin_server:-}\"python3\", \"burn.py\", \"{port}\", \"$((8000 * (100 + change) / 100))\"]"
      rates="[50, 100, 150, 200]";;
    go)
      # The profiling tests' Go service: each request hashes for X-Alpha thousand rounds.
      [ -x "$dir/../burn-go" ] || go build -o "$dir/../burn-go" "$(dirname "${BASH_SOURCE[0]}")/../../crates/loadlab/tests/labs/burn/burn.go"
      start="[${pin_server:-}\"$dir/../burn-go\", \"127.0.0.1:{port}\"]"
      headers="headers = { X-Alpha = \"$((300 * (100 + change) / 100))\" }"
      rates="[200, 400]";;
    origin)
      echo "{\"route\": \"/*\", \"body\": \"x\", \"stages\": [{\"at\": 0, \"status\": 200, \"latency\": \"$((10000 * (100 + change) / 100))us\"}]}" > "$dir/origin.json"
      start="[${pin_server:-}\"$LOADLAB\", \"origin\", \"--listen\", \"127.0.0.1:{port}\", \"--recipe\", \"origin.json\"]"
      rates="[200, 400, 600, 800, 1000, 1200]";;
    *) echo "SERVER is nginx, cpu, go or origin" >&2; exit 2;;
  esac
  rates=${RATES:-$rates}
  cat > "$dir/plan.toml" <<PLAN
name = "aa $SERVER"
[targets.svc]
url = "$url"
start = $start
[load]
rate = $rates
duration = "${DURATION:-3s}"
warmup = "${WARMUP:-1s}"
pause = "200ms"
repeats = ${REPEATS:-1}
placement = "${PLACEMENT:-shared}"
$headers
PLAN
}
