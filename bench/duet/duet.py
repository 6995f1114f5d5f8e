"""Where the pairs' spread comes from: one build at a time against both at once (a duet).

Each trial starts two fresh processes of the same server (an A/A pair) and measures, over 3 s
after 1 s of warm-up, each one's CPU per request (its CPU clock at the window's edges) and p50:
  seq:  A alone, then B alone (which first alternates), as `lab ab --one-at-a-time` runs a pair;
  duet: A and B at once, one `loadlab attack` sending to both in turn at twice the rate.
PIN=same puts both servers on the last CPU and loadlab on the others (as `lab ab` does); else
the scheduler places everything. LAYOUT=fixed starts each server under `setarch -R` with
PYTHONHASHSEED=0 (one memory layout). Appends one row per trial and mode to OUT:
server, trial, mode, A's CPU per request (us), p50 (us), requests, then B's.

usage: duet.py SERVER TRIALS OUT   (SERVER: cpu, go, nginx; LOADLAB, WORK, MODES=seq,duet)
"""
import csv, io, os, signal, socket, subprocess, sys, threading, time

SERVER, TRIALS, OUT = sys.argv[1], int(sys.argv[2]), sys.argv[3]
LOADLAB, WORK = os.environ["LOADLAB"], os.environ["WORK"]
HERE = os.path.dirname(os.path.abspath(__file__))
RATE = {"cpu": 50, "go": 400, "nginx": 400}[SERVER]
WARM, MEAS = 1.0, 3.0
CPUS = sorted(os.sched_getaffinity(0))
PIN = os.environ.get("PIN") == "same" and len(CPUS) > 1
SERVER_CPUS, LOADLAB_CPUS = ",".join(map(str, CPUS[-1:])), ",".join(map(str, CPUS[:-1]))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(port):
    if SERVER == "cpu":
        cmd = ["python3", os.path.join(HERE, "..", "aa", "burn.py"), str(port), "8000"]
    elif SERVER == "go":
        cmd = [os.path.join(WORK, "burn-go"), f"127.0.0.1:{port}"]
    else:
        conf = os.path.join(WORK, f"nginx-{port}.conf")
        with open(conf, "w") as f:
            f.write(f"worker_processes 1; pid {WORK}/nginx-{port}.pid; error_log {WORK}/error.log;\n"
                    f"events {{ worker_connections 4096; }}\n"
                    f"http {{ access_log off; server {{ listen 127.0.0.1:{port}; root {WORK}/html; }} }}\n")
        cmd = ["nginx", "-c", conf, "-g", "daemon off;"]
    env = dict(os.environ)
    if PIN:
        cmd = ["taskset", "-c", SERVER_CPUS] + cmd
    if os.environ.get("LAYOUT") == "fixed":
        cmd = ["setarch", "-R"] + cmd
        env["PYTHONHASHSEED"] = "0"
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(250):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            break
        except OSError:
            time.sleep(0.02)
    return p


def workers(p):
    # nginx's work is its worker's, the master's child.
    if SERVER != "nginx":
        return [p.pid]
    return [int(k) for k in open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()]


def cpu_ns(pids):
    # A process's CPU clock (clock_getcpuclockid): (~pid << 3) | CPUCLOCK_SCHED.
    return sum(time.clock_gettime_ns((~pid << 3) | 2) for pid in pids)


def url(port):
    return f"http://127.0.0.1:{port}" + ("/10k" if SERVER == "nginx" else "/")


def attack(ports, procs):
    targets = os.path.join(WORK, f"targets-{ports[0]}.txt")
    with open(targets, "w") as f:
        for port in ports:
            f.write(f"GET {url(port)}\n" + ("X-Alpha: 300\n" if SERVER == "go" else "") + "\n")
    pids = [workers(p) for p in procs]
    pin = ["taskset", "-c", LOADLAB_CPUS] if PIN else []
    g = subprocess.Popen(pin + [LOADLAB, "attack", "--targets", targets, "--rate", str(RATE * len(ports)),
                                "--duration", f"{WARM + MEAS}s", "--output-format", "csv"], stdout=subprocess.PIPE)
    marks = {}

    def mark(k):
        marks[k] = [cpu_ns(ps) for ps in pids]

    timers = [threading.Timer(WARM, mark, ("a",)), threading.Timer(WARM + MEAS, mark, ("b",))]
    for t in timers:
        t.start()
    out = g.stdout.read().decode()
    g.wait()
    for t in timers:
        t.join()
    rows = list(csv.reader(io.StringIO(out)))
    t0 = min(int(r[0]) for r in rows)
    res = []
    for i, port in enumerate(ports):
        lat = sorted(int(r[2]) for r in rows
                     if r[10] == url(port) and int(r[0]) - t0 >= WARM * 1e9 and r[1] == "200")
        n = len(lat)
        res.append(((marks["b"][i] - marks["a"][i]) / max(n, 1) / 1000, lat[n // 2] / 1000 if n else float("nan"), n))
    return res


def stop(p):
    p.send_signal(signal.SIGQUIT if SERVER == "nginx" else signal.SIGTERM)
    try:
        p.wait(5)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


modes = os.environ.get("MODES", "seq,duet").split(",")
with open(OUT, "a", newline="") as f:
    w = csv.writer(f)
    for t in range(TRIALS):
        a_first = (t // 2) % 2 == 0
        for mode in modes if t % 2 == 0 else modes[::-1]:
            r = {}
            if mode == "seq":
                for side in ("a", "b") if a_first else ("b", "a"):
                    port = free_port()
                    p = start(port)
                    r[side] = attack([port], [p])[0]
                    stop(p)
            else:
                pa, pb = free_port(), free_port()
                a, b = start(pa), start(pb)
                order = [(pa, a, "a"), (pb, b, "b")] if a_first else [(pb, b, "b"), (pa, a, "a")]
                for o, x in zip(order, attack([o[0] for o in order], [o[1] for o in order])):
                    r[o[2]] = x
                stop(a)
                stop(b)
            w.writerow([SERVER, t, mode, *r["a"], *r["b"]])
            f.flush()
            print(SERVER, t, mode, {k: f"{v[0]:.0f} us, p50 {v[1]:.0f} us" for k, v in r.items()},
                  file=sys.stderr, flush=True)
