#!/usr/bin/env bash
# A million spans at the lab's receiver, posted by loadlab's own OTLP exporter (the client
# half): the receiver keeps its bound (250,000 a lab), refuses and counts the rest, drops a
# million spans of traces it never sent, and stays within memory. Run by hand, under a 4 GiB
# address-space cap so that a bug kills the probe, not the machine.
#   N=1000000 bash bench/spans-flood.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-1000000}
cargo build --release -q -p spans --example flood
( ulimit -v $((4 << 20)); target/release/examples/flood "$N" )
