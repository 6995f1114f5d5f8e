#!/usr/bin/env bash
# Two "hosts" for example 009 on one machine: loopback addresses 127.0.0.2 (c5) and 127.0.0.3
# (c6g), each with the service on port 8080 and Debian's prometheus-process-exporter on 9256
# watching it as group `svc`. The lab knows them only by these URLs, as it would know two
# instances in a VPC; on real hosts, run the service and the exporter there instead.
#
#   bash hosts.sh start DIR     # pids and logs in DIR
#   bash hosts.sh stop DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:?start or stop} dir=${2:?a folder for pids and logs}
mkdir -p "$dir"
case $cmd in
  start)
    command -v prometheus-process-exporter >/dev/null ||
      { echo "needs Debian's prometheus-process-exporter (apt-get install prometheus-process-exporter)" >&2; exit 2; }
    # c5 does each request's work in 12,000 rounds, c6g in 7,000: about 3 and 1.75 ms of CPU.
    for host in "c5 127.0.0.2 12000" "c6g 127.0.0.3 7000"; do
      read -r name addr rounds <<<"$host"
      python3 "$here/svc.py" "$addr" 8080 "$rounds" > "$dir/$name-svc.log" 2>&1 &
      echo $! > "$dir/$name-svc.pid"
      printf 'process_names:\n  - name: svc\n    cmdline:\n    - %s\n' "'svc\\.py $addr 8080'" > "$dir/$name-exporter.yml"
      prometheus-process-exporter -config.path "$dir/$name-exporter.yml" \
        -web.listen-address "$addr:9256" > "$dir/$name-exporter.log" 2>&1 &
      echo $! > "$dir/$name-exporter.pid"
    done
    for url in 127.0.0.2:8080 127.0.0.3:8080 127.0.0.2:9256/metrics 127.0.0.3:9256/metrics; do
      for _ in $(seq 100); do curl -sf -o /dev/null "http://$url" && break; sleep 0.1; done
      curl -sf -o /dev/null "http://$url" || { echo "http://$url does not answer" >&2; exit 1; }
    done;;
  stop)
    for pid in "$dir"/*.pid; do [ -e "$pid" ] && kill "$(cat "$pid")" 2>/dev/null; rm -f "$pid"; done; true;;
  *) echo "start or stop" >&2; exit 2;;
esac
