//! A traced target: a service instrumented with the OpenTelemetry SDK as its authors would (for
//! Python from PyPI, for Go from the module proxy), started by the lab, sends its spans to the
//! lab's receiver through the standard variables, and the report says which span its slowest
//! requests spent their time in.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::support::{loadlab, stderr, tempdir};

/// The OpenTelemetry SDK and its OTLP/HTTP exporter, installed by scripts/test-all.
pub(crate) fn sdk_installed() {
    let o = std::process::Command::new("python3")
        .args(["-c", "import opentelemetry.sdk, opentelemetry.exporter.otlp.proto.http"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the OpenTelemetry SDK for Python is missing (pip3 install opentelemetry-sdk \
         opentelemetry-exporter-otlp-proto-http): {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn app(dir: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/010-where-the-tail-went/app.py");
    std::fs::copy(src, dir.join("app.py")).unwrap();
}

#[test]
fn a_traced_python_service_says_which_span_its_slowest_requests_spent_their_time_in() {
    sdk_installed();
    let d = tempdir("traced");
    app(&d);
    // 1 request in 33 waits 40 ms in db.query, the rest 2 ms: the slowest 1% of 150 requests
    // (2) are slow ones.
    let plan = "name = \"traced\"\n[targets.app]\nurl = \"http://127.0.0.1:{port}/\"\n\
                start = [\"python3\", \"app.py\", \"{port}\"]\ntraces = true\n\
                [load]\nrate = 50\nduration = \"3s\"\nwarmup = \"500ms\"\n";
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let out = d.join("out");
    let db = d.join("history.db");
    let o = loadlab()
        .args(["lab", "run"])
        .arg(d.join("plan.toml"))
        .arg("--out")
        .arg(&out)
        .arg("--history")
        .arg(&db)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains(": spans: the slowest 1% db.query "), "{err}");
    let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    assert_eq!(lab["targets"][0]["traces"], true, "{}", lab["targets"]);
    // The history keeps each span's self time in the slowest 1% as a series of its own.
    let o = loadlab().args(["history", "show", "--metric", "span:db.query", "--history"]).arg(&db).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(crate::support::stdout(&o).contains("span:db.query"), "{}", crate::support::stdout(&o));
    // report.html draws both: the two groups by span, and the slowest request's waterfall.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(">slowest 1% (") && html.contains(">median ("), "no tail chart");
    assert!(html.contains("the client saw "), "no waterfall");
    assert!(html.contains("<title>db.query: 4"), "the slowest request's db.query bar");
    let traces = &lab["steps"][0]["traces"];
    let tail = &traces["tail"];
    assert!(traces["missing"].is_null(), "{traces}");
    let slowest = &tail["slowest"];
    assert_eq!(slowest["with_spans"], slowest["requests"], "{tail}");
    let first = &slowest["names"][0];
    assert_eq!(first["name"], "db.query", "{tail}");
    let db = first["self_us"].as_f64().unwrap();
    assert!((38_000.0..80_000.0).contains(&db), "{tail}");
    // The median requests: db.query about 2 ms, the server span's own time small, the rest
    // (the network, the queue) covered by nothing.
    let median = &tail["median"];
    let med_db = median["names"].as_array().unwrap().iter().find(|n| n["name"] == "db.query").unwrap();
    assert!((1_500.0..15_000.0).contains(&med_db["self_us"].as_f64().unwrap()), "{median}");
    assert!(median["names"].as_array().unwrap().iter().any(|n| n["name"] == "render"), "{median}");
    assert!(median["uncovered_us"].as_f64().unwrap() >= 0.0);
    // The trace ids of the slowest, as Jaeger or Tempo take them.
    let ids = slowest["trace_ids"].as_array().unwrap();
    assert!(!ids.is_empty() && ids.iter().all(|i| i.as_str().unwrap().len() == 32), "{slowest}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Where the tail's time went"), "{md}");
    assert!(md.contains("**The slowest 1% (") && md.contains("): db.query "), "{md}");
    assert!(md.contains("| db.query | ") && md.contains("| (no span: network, queues) |"), "{md}");
    assert!(md.contains(ids[0].as_str().unwrap()), "{md}");
}

/// traced-go (otelhttp, the SDK's batch processor and OTLP/HTTP exporter), built once.
fn go_app() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = tempdir("traced-go-build");
            let o = std::process::Command::new("go")
                .args(["build", "-buildvcs=false", "-o"])
                .arg(dir.join("traced"))
                .arg(".")
                .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/labs/traced-go"))
                .output()
                .expect("go is needed for this test (scripts/test-all installs golang-go)");
            assert!(o.status.success(), "go build (the SDK comes from the Go module proxy): {}", stderr(&o));
            dir.keep().join("traced")
        })
        .clone()
}

#[test]
fn a_traced_go_service_says_which_span_its_slowest_requests_spent_their_time_in() {
    let app = go_app();
    let d = tempdir("traced-go");
    // 1 request in 25 waits 40 ms in db.query, the rest 2 ms.
    let plan = format!(
        "name = \"traced go\"\n[targets.api]\nurl = \"http://127.0.0.1:{{port}}/\"\n\
         start = [\"{}\", \"127.0.0.1:{{port}}\", \"25\"]\ntraces = true\n\
         [load]\nrate = 50\nduration = \"3s\"\nwarmup = \"500ms\"\n",
        app.display()
    );
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let out = d.join("out");
    let o = loadlab().args(["lab", "run"]).arg(d.join("plan.toml")).arg("--out").arg(&out).output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains(": spans: the slowest 1% db.query "), "{err}");
    let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    let traces = &lab["steps"][0]["traces"];
    assert!(traces["missing"].is_null(), "{traces}");
    let slowest = &traces["tail"]["slowest"];
    assert_eq!(slowest["with_spans"], slowest["requests"], "{traces}");
    assert_eq!(slowest["names"][0]["name"], "db.query", "{traces}");
    assert!((38_000.0..80_000.0).contains(&slowest["names"][0]["self_us"].as_f64().unwrap()), "{traces}");
    // The three spans of a request (otelhttp names the server's by its method, as the semantic
    // conventions ask), each request's tree whole.
    let median = traces["tail"]["median"]["names"].as_array().unwrap();
    for name in ["GET", "db.query", "render"] {
        assert!(median.iter().any(|n| n["name"] == name), "{name}: {median:?}");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("): db.query ") && md.contains("| render | "), "{md}");
}

#[test]
fn a_traced_target_that_sends_no_spans_is_said_not_guessed() {
    // The target is not instrumented (python's own http.server): every request carries a
    // traceparent, nothing comes back, and the report says so after a bounded wait.
    let d = tempdir("untraced");
    let plan = "name = \"silent\"\n[targets.web]\nurl = \"http://127.0.0.1:{port}/\"\n\
                start = [\"python3\", \"-m\", \"http.server\", \"--bind\", \"127.0.0.1\", \"{port}\"]\ntraces = true\n\
                [load]\nrate = 20\nduration = \"1s\"\nwarmup = \"200ms\"\n";
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let out = d.join("out");
    let o = loadlab().args(["lab", "run"]).arg(d.join("plan.toml")).arg("--out").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    let traces = &lab["steps"][0]["traces"];
    assert!(traces["missing"].as_str().unwrap().contains("no spans came for 1 of the 1 slowest"), "{traces}");
    let waited = traces["waited_s"].as_f64().unwrap();
    assert!((1.0..12.0).contains(&waited), "{traces}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("No spans came for these requests"), "{md}");
}

#[test]
fn lab_compare_names_the_span_that_grew_in_the_tail_with_its_interval() {
    sdk_installed();
    let d = tempdir("traced-compare");
    app(&d);
    // Old: db.query never slow; new: 1 request in 20 waits 40 ms in it. Two repeats a side.
    let lab = |name: &str, slow_every: u64| {
        let plan = format!(
            "name = \"traced\"\n[targets.app]\nurl = \"http://127.0.0.1:{{port}}/\"\n\
             start = [\"python3\", \"app.py\", \"{{port}}\", \"{slow_every}\"]\ntraces = true\n\
             [load]\nrate = 50\nduration = \"2s\"\nwarmup = \"300ms\"\nrepeats = 2\n"
        );
        std::fs::write(d.join(format!("{name}.toml")), plan).unwrap();
        let out = d.join(name);
        let o =
            loadlab().args(["lab", "run"]).arg(d.join(format!("{name}.toml"))).arg("--out").arg(&out).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        out
    };
    let (old, new) = (lab("old", 1_000_000), lab("new", 20));
    let o = loadlab().args(["lab", "compare"]).arg(&old).arg(&new).arg("--out").arg(d.join("cmp")).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned() + &stderr(&o);
    let line = out.lines().find(|l| l.starts_with("tail: ")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("app at ") && line.contains(": db.query in the slowest 1% "), "{line}");
    // About 2 ms before, 40 ms after: a growth of some +1,900% (the old side's slowest request
    // may have slept long once: at least +200%), with its interval (wide: the slowest 1% of a
    // 2 s step is one request).
    let pct: f64 = line.split(" (+").nth(1).and_then(|r| r.split('%').next()).and_then(|p| p.parse().ok()).unwrap();
    assert!((200.0..6000.0).contains(&pct), "{line}");
    assert!(line.contains("% [") && !line.contains("no interval"), "{line}");
    let md = std::fs::read_to_string(d.join("cmp/compare.md")).unwrap();
    assert!(md.contains("## What grew in the tail") && md.contains("db.query in the slowest 1%"), "{md}");
}

#[test]
fn lab_ab_names_the_span_that_grew_in_a_heads_tail() {
    sdk_installed();
    let d = tempdir("traced-ab");
    let repo = d.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| crate::bisect::git(&repo, args);
    git(&["init", "-q", "-b", "main"]);
    git(&["config", "user.email", "ci@example.com"]);
    git(&["config", "user.name", "CI"]);
    app(&repo);
    let plan = |slow_every: u64| {
        format!(
            "name = \"traced\"\n[targets.app]\nurl = \"http://127.0.0.1:{{port}}/\"\n\
             start = [\"python3\", \"app.py\", \"{{port}}\", \"{slow_every}\"]\ntraces = true\n\
             [load]\nrate = 50\nduration = \"2s\"\nwarmup = \"300ms\"\n"
        )
    };
    std::fs::write(repo.join("plan.toml"), plan(1_000_000)).unwrap();
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "the service"]);
    let base = git(&["rev-parse", "HEAD"]);
    // The head's query is slow for 1 request in 20.
    std::fs::write(repo.join("plan.toml"), plan(20)).unwrap();
    git(&["commit", "-q", "-am", "a slower query now and then"]);
    let head = git(&["rev-parse", "HEAD"]);
    let out = d.join("ab");
    let o = loadlab()
        .current_dir(&repo)
        .args(["lab", "ab", "plan.toml", &base, &head, "--repeats", "3", "--undecided-ok", "--out"])
        .arg(&out)
        .env_remove("LOADLAB_HISTORY")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(o.status.code().is_some_and(|c| c == 0 || c == 3), "{err}");
    assert!(err.contains("spans: the slowest 1% "), "{err}");
    let md = std::fs::read_to_string(out.join("ab.md")).unwrap();
    assert!(md.contains("## What grew in the tail"), "{md}");
    assert!(md.contains("app at 50 req/s, http1: db.query in the slowest 1% "), "{md}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("ab.json")).unwrap()).unwrap();
    let tail = &json["tails"][0];
    assert_eq!(tail["name"], "db.query", "{json}");
    assert!(tail["new_us"].as_f64().unwrap() > 5.0 * tail["old_us"].as_f64().unwrap(), "{tail}");
    // Over the pairs of labs, as every other row of lab ab.
    assert_eq!(tail["pairs"], 3, "{tail}");
    assert!(md.contains(", over 3 pairs)"), "{md}");
}

#[test]
fn a_target_the_lab_does_not_start_sends_its_spans_to_the_address_the_plan_gives() {
    // The service runs on its own, its SDK pointed (as a collector's otlphttp exporter would be)
    // at the address the plan's [traces] listen gives: the base endpoint, /v1/traces added by
    // the SDK.
    sdk_installed();
    let d = tempdir("traced-running");
    app(&d);
    let (port, receiver) = (crate::support::free_port(), crate::support::free_port());
    let mut cmd = std::process::Command::new("python3");
    cmd.current_dir(&d)
        .args(["app.py", &port.to_string()])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://127.0.0.1:{receiver}"))
        .env("OTEL_SERVICE_NAME", "api")
        .env("OTEL_BSP_SCHEDULE_DELAY", "200");
    let mut service = crate::support::Watched::spawn(cmd);
    service.wait_until("it listens", |_| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
    let plan = format!(
        "name = \"elsewhere\"\n[targets.api]\nurl = \"http://127.0.0.1:{port}/\"\ntraces = true\n\
         [traces]\nlisten = \"127.0.0.1:{receiver}\"\n\
         [load]\nrate = 50\nduration = \"3s\"\nwarmup = \"500ms\"\n"
    );
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let out = d.join("out");
    let o = loadlab().args(["lab", "run"]).arg(d.join("plan.toml")).arg("--out").arg(&out).output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("receiving spans at http://127.0.0.1:{receiver}/v1/traces")), "{err}");
    // The spans arrived and were read (which span leads the slowest 1%, two requests, is the
    // other tests' to say: a busy machine's one slow render can lead it here).
    assert!(err.contains(": spans: the slowest 1% "), "{err}");
    let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    let traces = &lab["steps"][0]["traces"];
    assert!(traces["missing"].is_null(), "{traces}");
    assert_eq!(traces["tail"]["slowest"]["names"][0]["name"], "db.query", "{traces}");
    // The address taken: the lab says so and stops before any load.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let plan = format!(
        "[targets.api]\nurl = \"http://127.0.0.1:{port}/\"\ntraces = true\n[traces]\nlisten = \"{}\"\n\
         [load]\nrate = 5\nduration = \"1s\"\n",
        taken.local_addr().unwrap()
    );
    std::fs::write(d.join("taken.toml"), plan).unwrap();
    let o =
        loadlab().args(["lab", "run"]).arg(d.join("taken.toml")).arg("--out").arg(d.join("taken")).output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("could not listen on") && err.contains("(traces.listen)"), "{err}");
}

#[test]
fn the_client_half_meets_the_servers_spans_in_the_users_own_collector() {
    // The user's collector takes both halves: the service's SDK is pointed there by the lab's
    // environment (which the lab leaves as it is), and the plan exports loadlab's client spans
    // there after each step.
    sdk_installed();
    let d = tempdir("client-half");
    app(&d);
    let collector = crate::support::collector::Collector::start();
    let plan = format!(
        "name = \"client-half\"\n[targets.app]\nurl = \"http://127.0.0.1:{{port}}/\"\n\
         start = [\"python3\", \"app.py\", \"{{port}}\"]\ntraces = true\n\
         [traces]\nexport = \"{}\"\n[load]\nrate = 20\nduration = \"2s\"\nwarmup = \"500ms\"\n",
        collector.url()
    );
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let out = d.join("out");
    let o = loadlab()
        .args(["lab", "run"])
        .arg(d.join("plan.toml"))
        .arg("--out")
        .arg(&out)
        .env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", format!("{}/v1/traces", collector.url()))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // 2.5 s at 20/s: the warm-up's requests are exported too (marked so).
    let said = format!("client spans: 50 exported to {}/v1/traces", collector.url());
    assert!(err.contains(&said), "{err}");
    let lab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("lab.json")).unwrap()).unwrap();
    assert_eq!(lab["steps"][0]["traces"]["exported"]["exported"], 50, "{}", lab["steps"][0]["traces"]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains(&said), "{md}");
    let spans = collector.spans();
    let client: Vec<_> = spans.iter().filter(|s| s.parent == 0).collect();
    assert_eq!(client.len(), 50, "{} spans", spans.len());
    // Each request's server span is the child of its client span, and lies within it (the
    // client's from its send to its last byte; one clock, 5 ms for its slew).
    for c in &client {
        let server = spans
            .iter()
            .find(|s| s.trace_id == c.trace_id && s.parent == c.span_id)
            .unwrap_or_else(|| panic!("no server span under client span {:x}", c.span_id));
        assert_eq!(server.name, "GET /");
        assert!(server.start_ns + 5_000_000 >= c.start_ns && server.end_ns <= c.end_ns + 5_000_000, "{c:?} {server:?}");
    }
}

#[test]
fn a_hostile_span_name_drives_no_terminal_and_scripts_no_page() {
    // The service's authors (or whoever controls its spans) name its query span with markup and
    // terminal escapes: the console, report.md, report.html and the history's page show it as
    // text.
    sdk_installed();
    let d = tempdir("hostile-span");
    let hostile = "<img src=x onerror=alert(1)>\\x1b]0;pwned\\x07\\x1b[2Jdb";
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/010-where-the-tail-went/app.py"),
    )
    .unwrap()
    .replace("\"db.query\"", &format!("\"{hostile}\""));
    assert!(src.contains("onerror"), "the example's span is named db.query");
    std::fs::write(d.join("app.py"), src).unwrap();
    let plan = "name = \"hostile\"\n[targets.app]\nurl = \"http://127.0.0.1:{port}/\"\n\
                start = [\"python3\", \"app.py\", \"{port}\", \"5\"]\ntraces = true\n\
                [load]\nrate = 20\nduration = \"2s\"\nwarmup = \"300ms\"\n";
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let (out, db) = (d.join("out"), d.join("h.db"));
    let o = loadlab()
        .args(["lab", "run"])
        .arg(d.join("plan.toml"))
        .arg("--out")
        .arg(&out)
        .arg("--history")
        .arg(&db)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // The span was kept, its name made plain (controls replaced, markup left as text).
    assert!(err.contains("spans: the slowest 1% <img src=x onerror=alert(1)>"), "{err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!md.contains('\u{1b}') && !md.contains("<img"), "markup in report.md is escaped or quoted: {md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(!html.contains("<img src=x") && html.contains("&lt;img src=x"), "report.html");
    let o = loadlab()
        .args(["history", "show", "--json", "--history"])
        .arg(&db)
        .arg("--out")
        .arg(d.join("site"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(d.join("site/history.html")).unwrap();
    assert!(
        page.contains("onerror=alert(1)") || page.contains("onerror\\u003dalert(1)"),
        "the span's series is on the page"
    );
    assert!(!page.contains("<img src=x"), "history.html");
    // Opened in a browser, the pages' scripts drew the name as text: no element of it.
    for page in [out.join("report.html"), d.join("site/history.html")] {
        let url = format!("file://{}", page.display());
        let dom = crate::support::chromium(&["--virtual-time-budget=5000", "--dump-dom", &url], &d.join("profile"));
        let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
        assert!(
            dom.contains("onerror=alert(1)"),
            "{}: the name is shown: {}",
            page.display(),
            &dom[..dom.len().min(600)]
        );
        assert!(!dom.contains("<img src=\"x\""), "{}: the name became an element", page.display());
    }
}
