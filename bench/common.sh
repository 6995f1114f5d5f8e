# Sourced by the bench scripts (from the repository's top).

# need_tools TOOL...: exits with a one-line message when a tool is missing.
need_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "missing $tool: run ../shared/tools/install-peers.sh" >&2; exit 1; }
  done
}

# build_loadlab: builds the fastest binary (the dist profile: thin LTO, one codegen unit, as the
# container image ships) and sets LOADLAB to its path; LOADLAB_BIN=path measures that binary
# instead (another profile's build, kept aside), with nothing built.
build_loadlab() {
  if [ -n "${LOADLAB_BIN:-}" ]; then LOADLAB=$LOADLAB_BIN; return; fi
  cargo build --profile dist -q
  LOADLAB=$PWD/target/dist/loadlab
}

# start_nginx WORK CORE SERVER_BLOCK: writes a 200 KiB file to
# WORK/html/200k and starts one nginx worker pinned to CORE with SERVER_BLOCK (which may use
# $work/html as its root); the caller stops it with `nginx -c WORK/nginx.conf -s stop`.
start_nginx() {
  local work=$1 core=$2 server=$3
  mkdir -p "$work/html"
  head -c 153600 /dev/urandom | base64 -w0 | head -c 204800 > "$work/html/200k"
  chmod -R a+rX "$work"  # nginx's workers run unprivileged
  cat > "$work/nginx.conf" <<NGINX
worker_processes 1;
daemon on;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 20000; }
http {
  access_log off;
  keepalive_requests 100000000;
  http2_max_concurrent_streams 128;
  $server
}
NGINX
  taskset -c "$core" nginx -c "$work/nginx.conf"
}
