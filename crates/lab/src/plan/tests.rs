//! The plan parser's tests: a full plan, and each rejection naming its place.

use super::*;

const FULL: &str = r#"
name = "c6g vs c5"
question = "Does c6g hold more load than c5?"

[origin]
recipe = "recipes/200kb-100ms.json"

[targets.c5]
url = "http://127.0.0.1:7080/foobar"
start = ["nginx", "-p", ".", "-c", "c5.conf"]
ready = "http://127.0.0.1:7080/health"
metrics = "http://127.0.0.1:7080/metrics"
series = ["pool_busy_workers"]

[targets.c6g]
origin = "recipes/fast.json"
path = "/foobar"

[load]
rate = [400, "800/s", 1000]
duration = "60s"
warmup = "5s"
repeats = 3
protocol = ["http1", "h2c"]
headers = ["replayed-traffic: true"]
pace_tick = "1ms"

[[variants]]
name = "gzip 300kb"
recipe = "recipes/300kb-gzip.json"

[slo]
success = ">= 99.9%"
p99 = "< 1s"

[capacity]
start = 100
max = 50000
precision = "5%"
probe = "30s"

[[hypotheses]]
claim = "c6g answers faster than c5"
metric = "p99"
lower = "c6g"
than = "c5"
"#;

#[test]
fn a_started_target_may_leave_its_port_to_the_lab() {
    let text =
        "[targets.a]\nurl = \"http://127.0.0.1:{port}/x\"\nstart = [\"srv\", \"--listen\", \"127.0.0.1:{port}\"]\n\
                metrics = \"http://127.0.0.1:{port}/m\"\n[load]\nrate = 1\n";
    let p = parse(text, "plan.toml", Path::new(".")).unwrap();
    assert!(p.targets[0].uses_port_placeholder());
    assert_eq!(crate::run::systems::expand_argv(&["a{port}b".into()], Some(8123)), ["a8123b"]);
    let fixed = parse(&text.replace("{port}", "7080"), "plan.toml", Path::new(".")).unwrap();
    assert!(!fixed.targets[0].uses_port_placeholder());
}

#[test]
fn a_full_plan_parses() {
    let p = parse(FULL, "plan.toml", Path::new("/plans")).unwrap();
    assert_eq!(p.name, "c6g vs c5");
    assert_eq!(p.targets.len(), 2);
    assert_eq!(p.targets[0].name, "c5", "targets keep the file's order");
    assert!(matches!(&p.targets[0].kind, TargetKind::Command { start, .. } if start[0] == "nginx"));
    assert!(
        matches!(&p.targets[1].kind, TargetKind::Simulator { recipe } if recipe == Path::new("/plans/recipes/fast.json"))
    );
    assert_eq!(p.load.rate, vec![400.0, 800.0, 1000.0]);
    assert_eq!(p.load.protocol, vec![Protocol::Http1, Protocol::H2c]);
    assert_eq!((p.load.duration, p.load.warmup, p.load.repeats), (Duration::from_secs(60), Duration::from_secs(5), 3));
    assert_eq!(p.load.pace_tick, Duration::from_millis(1));
    assert_eq!(p.slo.len(), 2);
    let c = p.capacity.unwrap();
    assert_eq!((c.start, c.max, c.precision, c.probe), (100.0, 50000.0, 0.05, Duration::from_secs(30)));
    assert_eq!(p.hypotheses[0].subject, "c6g");
    assert!(p.hypotheses[0].lower);
    assert_eq!(p.variants[0].recipe.as_deref(), Some(Path::new("/plans/recipes/300kb-gzip.json")));
}

/// Each bad plan fails with the file, the line and the field in one line.
#[test]
fn rejections_name_file_line_and_field() {
    let base = "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = 10\n";
    for (text, line, want) in [
        ("[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = \"fast\"\n", 4, "load.rate: bad rate \"fast\""),
        (
            "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = 10\nduration = \"10\"\n",
            5,
            "load.duration: bad duration \"10\": missing unit",
        ),
        (
            "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = 10\nprotocol = \"spdy\"\n",
            5,
            "load.protocol: unknown protocol \"spdy\"",
        ),
        ("[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = 10\nratee = 5\n", 5, "unknown field `ratee`"),
        (
            "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nconnections = 0\n",
            4,
            "load.connections: 0 is out of range",
        ),
        ("[targets.a]\nurl = \"http://127.0.0.1:99999/\"\n[load]\nrate = 1\n", 2, "targets.a.url: bad URL"),
        ("[targets.a]\nport = 3\n", 1, "targets.a: unknown field `port`"),
        (
            "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = 1\n[slo]\ntarget_cpu = \"< 50\"\n",
            6,
            "slo.target_cpu: target_cpu (CPU per request) is sampled beside a step",
        ),
        ("[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nspeed = 2\n", 4, "load.speed: speeds a replay"),
        (
            "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = 5\nreplay = \"x.log\"\n",
            5,
            "load.replay: a replay sends at the log's times",
        ),
        (
            "[targets.a]\nurl = \"http://127.0.0.1:{port}/\"\n[load]\nrate = 1\n",
            1,
            "targets.a: {port} is filled only for a command the lab starts",
        ),
        (
            "[targets.a]\nurl = \"http://127.0.0.1:80/\"\nstart = [\"srv\", \"{port}\"]\n[load]\nrate = 1\n",
            2,
            "targets.a.url: the command is given {port} but the url is not",
        ),
        (
            "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nconnections = 2\npace_tick = \"1ms\"\n",
            5,
            "load.pace_tick: paces an open model",
        ),
        (&format!("{base}pace_tick = \"2s\"\n"), 5, "load.pace_tick: must be at most 1s"),
        ("[targets.a]\nurl = \"http://127.0.0.1:1/\"\n", 0, "load: give rate (open model) or connections"),
        (&format!("{base}[slo]\np99 = \"1s\"\n"), 6, "slo.p99: \"1s\": expected a comparison"),
        (&format!("{base}[slo]\np42 = \"< 1s\"\n"), 6, "slo.p42: unknown metric"),
        (
            &format!("{base}[[hypotheses]]\nclaim = \"x\"\nmetric = \"p99\"\nlower = \"b\"\nthan = \"a\"\n"),
            5,
            "\"b\" is not a target or a variant",
        ),
        (
            &format!("{base}[[hypotheses]]\nclaim = \"x\"\nmetric = \"p99\"\nlower = \"a\"\nthan = \"a\"\nspan = \"db\"\n"),
            5,
            "hypotheses: span: needs a traced target (traces = true)",
        ),
        (&format!("{base}[traces]\nlisten = \"4318\"\n"), 6, "traces.listen: \"4318\": an address and port"),
        (&format!("{base}[traces]\nlisten = \"127.0.0.1:4318\"\n"), 6, "traces.listen: no target has traces = true"),
        (
            &format!("{base}[traces]\nexport = \"ftp://x/v1/traces\"\n"),
            6,
            "traces.export: \"ftp://x/v1/traces\": an http:// or https:// URL of an OTLP/HTTP collector",
        ),
        (&format!("{base}[traces]\nexport = \"http://127.0.0.1:4318\"\n"), 6, "traces.export: no target has traces = true"),
        (&format!("{base}[capacity]\nstart = 100\nmax = 50\n"), 7, "capacity.max: 50 is not above start"),
        (
            "[targets.a]\nurl = \"http://127.0.0.1:{port}/\"\nstart = [\"srv\", \"{port}\"]\nprocess = \"srv\"\n[load]\nrate = 1\n",
            4,
            "targets.a.process: names the processes to profile: give profile = true too",
        ),
        (
            "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[targets.a.measure]\nprometheus = \"http://127.0.0.1:9/\"\ninterval = \"99999999999999999999999h\"\n[load]\nrate = 1\n",
            5,
            "targets.a.measure.interval: \"99999999999999999999999h\": a duration above zero and at most an hour",
        ),
        (
            "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[targets.a.measure]\nprometheus = \"http://127.0.0.1:9/\"\nhost_steal = \"none\"\n[load]\nrate = 1\n",
            5,
            "targets.a.measure.host_steal: \"none\": a share such as",
        ),
        ("name = [1\n", 2, "invalid array; expected `]`"),
        ("", 0, "no [targets.NAME] table"),
    ] {
        let e = parse(text, "plan.toml", Path::new(".")).unwrap_err();
        let s = e.to_string();
        let place = if line == 0 { "plan.toml: ".to_owned() } else { format!("plan.toml:{line}: ") };
        assert!(s.starts_with(&place), "{text:?}: {s}");
        assert!(s.contains(want), "{text:?}: {s}");
        assert_eq!(s.lines().count(), 1, "{s}");
    }
}

#[test]
fn templates_in_headers_and_body_are_checked_and_read_from_the_plan_directory() {
    let dir = std::env::temp_dir().join(format!("loadlab-plan-templates-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("users.txt"), "ana\nbo\n").unwrap();
    let ok = "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = 1\nheaders = [\"X-Id: {{uuid}}\"]\n\
              body = '{\"u\":\"{{line users.txt}}\"}'\n";
    let p = parse(ok, "plan.toml", &dir).unwrap();
    assert_eq!(p.load.template_dir, dir);
    for (text, says) in [
        ("[load]\nrate = 1\nheaders = [\"X-Id: {{uid}}\"]\n", "load.headers: x-id: template {{uid}}: unknown"),
        ("[load]\nrate = 1\nbody = '{{line nobody.txt}}'\n", "load.body: body: {{line nobody.txt}}: "),
    ] {
        let e = parse(&format!("[targets.a]\nurl = \"http://127.0.0.1:1/\"\n{text}"), "plan.toml", &dir)
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{e}");
    }
}

#[test]
fn a_running_target_may_name_the_processes_to_sample() {
    let plan = parse(
        "[targets.a]\nurl = \"http://127.0.0.1:1/\"\nprocess = \"nginx\"\n[load]\nrate = 1\n",
        "plan.toml",
        Path::new("."),
    )
    .unwrap();
    assert!(matches!(&plan.targets[0].kind, TargetKind::Running { process: Some(p), pid: None, .. } if p == "nginx"));
    assert!(plan.targets[0].profile.is_none());
}

#[test]
fn quick_shortens_steps_repeats_and_probes_and_nothing_else() {
    let p = parse(FULL, "plan.toml", Path::new("/plans")).unwrap();
    let q = p.quick();
    assert_eq!((q.load.duration, q.load.warmup, q.load.repeats), (QUICK_STEP, Duration::from_millis(500), 3));
    let (full, quick) = (p.capacity.as_ref().unwrap(), q.capacity.as_ref().unwrap());
    assert_eq!((quick.probe, quick.precision, quick.start, quick.max), (QUICK_STEP, 0.10, full.start, full.max));
    assert_eq!((q.load.rate.clone(), q.targets.len(), q.variants.len()), (p.load.rate.clone(), 2, 1));
    assert_eq!(crate::plan::matrix::count(&q), crate::plan::matrix::count(&p), "the same steps, shorter");
    // Already short: left as it is.
    assert_eq!(q.quick().load.duration, QUICK_STEP);
}

#[test]
fn headers_are_lines_or_a_table() {
    let plan =
        |headers: &str| format!("[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = 1\nheaders = {headers}\n");
    let lines = parse(&plan(r#"["Accept-Encoding: gzip", "X-Team: perf"]"#), "plan.toml", Path::new(".")).unwrap();
    let table = parse(&plan(r#"{ Accept-Encoding = "gzip", X-Team = "perf" }"#), "plan.toml", Path::new(".")).unwrap();
    assert_eq!(table.load.headers, lines.load.headers);
    let bad = parse(&plan("{ X-Count = 3 }"), "plan.toml", Path::new(".")).unwrap_err().to_string();
    assert!(bad.contains("headers: a list of \"Name: value\" lines, or a table"), "{bad}");
}
