//! The history in both stores, through the same calls: an SQLite file, and a real PostgreSQL
//! server (Debian's package, started here by pid in a folder of its own and stopped after).

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use history::{Added, Entry, History, Step};
use stats::change_points::Settings;

/// Twelve labs of one plan: p99 at 10 ms for six, then 13 ms; the sixth lab's second step
/// not counted (generator-limited); profiled functions, `deflate` growing with the p99, and
/// traced spans, `db.query`'s self time in the slowest 1% growing with it.
fn labs() -> Vec<Entry> {
    (0..12)
        .map(|i| {
            let p99 = if i < 6 { 10.0 } else { 13.0 } + [0.1, -0.1, 0.05, -0.05, 0.0, 0.08][i % 6];
            let counted = Step {
                id: "01-r400".into(),
                target: "svc".into(),
                load: r#"{"rate":400.0}"#.into(),
                label: "400/s".into(),
                repeat: 0,
                not_counted: None,
                values: vec![
                    ("p99".into(), p99),
                    ("throughput".into(), 400.0),
                    ("fn:deflate".into(), if i < 6 { 20.0 } else { 29.0 }),
                    ("fn:memcpy".into(), 5.0),
                    ("span:db.query".into(), if i < 6 { 2_000.0 } else { 5_000.0 }),
                    ("span:render".into(), 1_000.0),
                ],
            };
            let uncounted = Step {
                id: "02-r800".into(),
                label: "800/s".into(),
                load: r#"{"rate":800.0}"#.into(),
                not_counted: (i == 5).then(|| "generator-limited: the generator stalled 2.0 s".to_owned()),
                values: if i == 5 {
                    vec![]
                } else {
                    vec![("p99".into(), 20.0 + [0.1, -0.1, 0.05, -0.05, 0.0, 0.08][i % 6])]
                },
                ..counted.clone()
            };
            Entry {
                uid: format!("lab-{i}"),
                plan: "api".into(),
                started_unix_s: 1_790_000_000 + i as i64 * 3600,
                commit: Some(format!("{i:02}aaaaaaaaaaaaaaa")),
                branch: Some("main".into()),
                tags: r#"{"version":"1.4"}"#.into(),
                loadlab: "0.1.0".into(),
                measurement: 1,
                machine: "0badcafe".into(),
                machine_text: "2 × test CPU, 24 GiB, Linux 6".into(),
                path: format!("labs/{i}"),
                quick: false,
                steps: vec![counted, uncounted],
            }
        })
        .collect()
}

/// Everything a history does, the same in either store.
async fn exercise(mut h: History) {
    let all = labs();
    let mut ids = Vec::new();
    for e in &all[..11] {
        match h.add(e).await.unwrap() {
            Added::New(id) => ids.push(id),
            Added::Already(_) => panic!("new lab refused"),
        }
    }
    assert_eq!(h.add(&all[3]).await.unwrap(), Added::Already(ids[3]), "a lab added twice is kept once");
    // Read back as written.
    let stored = h.labs().await.unwrap();
    assert_eq!(stored.len(), 11);
    let mut back = stored[4].1.clone();
    back.steps.iter_mut().for_each(|s| s.values.sort_by(|a, b| a.0.cmp(&b.0)));
    let mut want = all[4].clone();
    want.steps.iter_mut().for_each(|s| s.values.sort_by(|a, b| a.0.cmp(&b.0)));
    assert_eq!(back, want);
    assert_eq!(stored[5].1.steps[1].not_counted.as_deref(), Some("generator-limited: the generator stalled 2.0 s"));

    // Filtered by the database: a metric, the profiled functions, a plan, a target.
    let only = |f: history::Filter| {
        let h = &h;
        async move { h.labs_where(&f).await.unwrap() }
    };
    let p99 = only(history::Filter { metric: Some("p99".into()), ..Default::default() }).await;
    assert_eq!(p99.len(), 11);
    assert!(p99.iter().flat_map(|(_, e)| &e.steps).all(|s| s.values.iter().all(|(m, _)| &**m == "p99")));
    let functions = only(history::Filter { metric: Some("fn:".into()), ..Default::default() }).await;
    let names: std::collections::BTreeSet<&str> =
        functions.iter().flat_map(|(_, e)| &e.steps).flat_map(|s| s.values.iter().map(|(m, _)| &**m)).collect();
    assert_eq!(names.into_iter().collect::<Vec<_>>(), ["fn:deflate", "fn:memcpy"]);
    let spans = only(history::Filter { metric: Some("span:".into()), ..Default::default() }).await;
    let names: std::collections::BTreeSet<&str> =
        spans.iter().flat_map(|(_, e)| &e.steps).flat_map(|s| s.values.iter().map(|(m, _)| &**m)).collect();
    assert_eq!(names.into_iter().collect::<Vec<_>>(), ["span:db.query", "span:render"]);
    assert!(only(history::Filter { plan: Some("other".into()), ..Default::default() }).await.is_empty());
    let none = only(history::Filter { target: Some("db".into()), ..Default::default() }).await;
    assert!(none.iter().all(|(_, e)| e.steps.is_empty()), "no step of target db");
    assert_eq!(h.newest().await.unwrap(), Some(ids[10]));
    assert_eq!(h.labs_for_check(ids[10], false).await.unwrap(), stored);

    // Series: the uncounted step is in none; the change at the seventh lab is pending (5 labs
    // after it needed, 5 there).
    let s = Settings::default();
    let q = history::Query { metric: Some("p99".into()), ..Default::default() };
    let series = history::series(&stored, &q, &s);
    assert_eq!(series.len(), 2);
    let slow = series.iter().find(|x| x.key.load == "800/s").unwrap();
    assert_eq!(slow.points.len(), 10, "the generator-limited step never enters a series");
    assert!(slow.changes.is_empty(), "{:?}", slow.changes);
    let p99 = series.iter().find(|x| x.key.load == "400/s").unwrap();
    assert_eq!(p99.changes.len(), 1, "{:?}", p99.changes);
    assert_eq!((p99.changes[0].index, p99.changes[0].pending), (6, 0));
    assert_eq!(p99.points[6].commit.as_deref(), Some("06aaaaaaaaaaaaaaa"));
    let text = history::show_text(&series, &s);
    assert!(text.contains("change at lab 7 (after 05aaaaaaaa, from 06aaaaaaaa): 10.0ms -> 13.0ms, +29.8%"), "{text}");

    // The check: the twelfth lab at the new level is within it, but the series carries the
    // confirmed +30% from 06aaaa that nobody accepted: it fails, naming where it began.
    let gates = lab::Gate::parse_history_list("p99>+5%").unwrap();
    let Added::New(last) = h.add(&all[11]).await.unwrap() else { panic!() };
    let stored = h.labs().await.unwrap();
    let rules = |accepted| history::Rules::new(&gates, &s, accepted);
    let checked = history::check(&stored, last, &rules(&[])).unwrap();
    let text = history::check_text(&checked);
    assert_eq!(checked.worse().count(), 1, "{text}");
    assert!(text.contains("WORSE (a regression not accepted)"), "{text}");
    assert!(text.contains("regression since 06aaaaaaaa (after 05aaaaaaaa): 10.0ms -> 13.0ms, +30.0% ["), "{text}");
    assert!(text.contains("grew: deflate 20.0 -> 29.0"), "{text}");
    assert!(text.contains("grew in the slowest 1%: db.query 2.00ms -> 5.00ms of self time"), "{text}");
    assert!(!text.contains("render"), "{text}");
    assert!(checked.too_short().is_empty(), "{:?}", checked.too_short());
    // Accepted (by a prefix of its commit), it holds, and the acceptance is kept and shown.
    assert!(h.acceptances().await.unwrap().is_empty());
    let acceptance = history::Acceptance {
        commit: "06aaaa".into(),
        plan: Some("api".into()),
        metric: None,
        reason: "zstd replaced gzip".into(),
        who: "ana".into(),
        at_unix_s: 1_790_100_000,
    };
    h.accept(&acceptance).await.unwrap();
    let accepted = h.acceptances().await.unwrap();
    assert_eq!(accepted, vec![acceptance]);
    let checked = history::check(&stored, last, &rules(&accepted)).unwrap();
    let text = history::check_text(&checked);
    assert_eq!(checked.worse().count(), 0, "{text}");
    assert!(text.contains("accepted by ana on 2026-09-22: \"zstd replaced gzip\""), "{text}");
    let mut worse = all[11].clone();
    worse.uid = "worse".into();
    worse.started_unix_s += 3600;
    // +80% against the accepted level: past the gate and the p99 floor (25% and 5 ms, 63% of
    // 13 ms; the level has 5 labs, its own spread from 5).
    worse.steps[0].values[0].1 = 23.4;
    worse.steps[0].values[2].1 = 36.0;
    let Added::New(id) = h.add(&worse).await.unwrap() else { panic!() };
    let stored = h.labs().await.unwrap();
    let checked = history::check(&stored, id, &rules(&accepted)).unwrap();
    let text = history::check_text(&checked);
    // Far past its gate (16 times it, past the floor) against a steady level: a tail (p99) is
    // not judged alone (it spikes alone now and then on a shared machine), so a warning that
    // says when it turns red; two reruns of the same commit that agree fail it as a run of three.
    assert_eq!(checked.worse().count(), 0, "{text}");
    assert!(text.contains("red from the 2nd lab after it if it stays"), "{text}");
    let mut id = 0;
    for rerun in 1..=2 {
        let mut again = worse.clone();
        again.uid = format!("rerun-{rerun}");
        again.started_unix_s += 600 * rerun;
        let Added::New(new) = h.add(&again).await.unwrap() else { panic!() };
        id = new;
    }
    let stored = h.labs().await.unwrap();
    let checked = history::check(&stored, id, &rules(&accepted)).unwrap();
    let text = history::check_text(&checked);
    assert_eq!(checked.worse().count(), 1, "{text}");
    assert!(text.contains("grew: deflate 29.0 -> 36.0"), "{text}");
    assert!(text.contains("its level moved from 10.0ms to 13.0ms"), "{text}");

    // CSV in Otava's layout, JSON, Markdown and HTML.
    let one = history::series(&stored, &history::Query { load: Some("400".into()), ..Default::default() }, &s);
    let csv = history::csv(&one);
    assert!(csv.starts_with("time,commit,fn:deflate,fn:memcpy,p99,span:db.query,span:render,throughput\n"), "{csv}");
    assert_eq!(csv.lines().count(), 16);
    // Every series: each column named by its whole key, no two alike.
    let all = history::csv(&history::series(&stored, &history::Query::default(), &s));
    let header: Vec<&str> = all.lines().next().unwrap().split(',').collect();
    let distinct: std::collections::BTreeSet<&&str> = header.iter().collect();
    assert_eq!(distinct.len(), header.len(), "{header:?}");
    assert!(header[2].starts_with("api / ") && header[2].contains(" on "), "{header:?}");
    let json: serde_json::Value = serde_json::from_str(&history::json(&one, &s)).unwrap();
    assert_eq!(json["series"].as_array().unwrap().len(), 6);
    assert!(history::markdown(&one, &s, &[], true).contains("| 7 |"));
    let md = history::markdown(&one, &s, &[], false);
    assert!(md.contains("## Changes, newest first") && !md.contains("| 7 |"), "the overview only: {md}");
    let html = history::html(&one, &s, &[], std::path::Path::new("."));
    assert!(html.contains("labs/6/report.html"), "a change links to the first lab at its new level");
    assert_eq!(html.matches("\"point\":").count(), 6, "a chart per series");
    // The span whose time in the slowest 1% moved is among the changes, with its unit.
    let overview = html.split("</section>").next().unwrap();
    assert!(overview.contains("span:db.query") && overview.contains("2.00ms"), "{overview}");
}

/// A lab of schema 2's layout (the key plan + start second + machine), with one step.
const OLD_LAB: [&str; 3] = [
    "INSERT INTO labs (id, plan, started_unix_s, commit_sha, branch, tags, loadlab, measurement, machine, \
     machine_text, path, quick, recorded_unix_s) VALUES (1, 'api', 1790000000, 'c0', 'main', '{}', '0.1.0', 2, \
     'm', 'test', 'labs/old', 0, 1790000100)",
    "INSERT INTO steps (lab_id, step, target, load_key, label, repeat_no, not_counted) \
     VALUES (1, '01-r400', 'svc', '{\"rate\":400.0}', '400/s', 0, NULL)",
    "INSERT INTO figures (lab_id, step, metric, value) VALUES (1, '01-r400', 'p99', 10.5)",
];

/// A history written by the previous schema, opened by this loadlab: its lab is kept, found
/// again by the identity its folder gives, and a lab started in the same second is a new one.
async fn an_old_history_is_brought_up_to_date(mut h: History) {
    let stored = h.labs().await.unwrap();
    assert_eq!(stored.len(), 1);
    let (id, old) = &stored[0];
    assert_eq!((old.uid.as_str(), old.path.as_str()), ("key:api|1790000000|m", "labs/old"));
    assert_eq!(old.steps[0].values, vec![("p99".into(), 10.5)]);
    let mut again = labs()[0].clone();
    (again.started_unix_s, again.machine, again.uid) =
        (1_790_000_000, "m".into(), history::uid(None, "api", 1_790_000_000, "m"));
    assert_eq!(h.add(&again).await.unwrap(), Added::Already(*id));
    again.uid = "9a7c-new".into();
    assert!(matches!(h.add(&again).await.unwrap(), Added::New(_)), "the same second, another lab");
    assert_eq!(h.labs().await.unwrap().len(), 2);
}

/// Two labs of one plan started in the same second on one machine (two CI jobs on one runner),
/// from four writers at once: every one is kept.
fn same_second(writer: usize, n: usize) -> Entry {
    let mut e = labs()[0].clone();
    e.uid = format!("w{writer}-{n}");
    e.path = format!("labs/w{writer}-{n}");
    e
}

#[tokio::test]
async fn an_sqlite_history_is_created_on_first_use_and_read_back() {
    let dir = std::env::temp_dir().join(format!("loadlab-history-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("history.db");
    let _ = std::fs::remove_file(&file);
    exercise(History::open(file.to_str().unwrap()).await.unwrap()).await;
    // Four writers on one new file at once (the first use among them), 25 labs each.
    let shared = dir.join("shared.db");
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let shared = shared.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(async {
                    let mut h = History::open(shared.to_str().unwrap()).await.unwrap();
                    for n in 0..25 {
                        assert!(matches!(h.add(&same_second(w, n)).await.unwrap(), Added::New(_)));
                    }
                })
            })
        })
        .collect();
    writers.into_iter().for_each(|w| w.join().unwrap());
    assert_eq!(History::open(shared.to_str().unwrap()).await.unwrap().labs().await.unwrap().len(), 100);
    // Schema 2's file: upgraded when opened; a later schema's: refused, naming both.
    let old = dir.join("schema2.db");
    {
        let c = rusqlite::Connection::open(&old).unwrap();
        for t in history::tables_of_schema_2("INTEGER PRIMARY KEY").iter().map(String::as_str).chain(OLD_LAB) {
            c.execute_batch(t).unwrap();
        }
    }
    an_old_history_is_brought_up_to_date(History::open(old.to_str().unwrap()).await.unwrap()).await;
    rusqlite::Connection::open(&old).unwrap().execute_batch("UPDATE loadlab_schema SET version = 99").unwrap();
    let e = History::open(old.to_str().unwrap()).await.err().unwrap().to_string();
    assert!(e.contains("schema2.db: written by a loadlab with schema 99; this one reads schema 3"), "{e}");
    // Reopened, it holds what it held.
    let again = History::open(file.to_str().unwrap()).await.unwrap();
    assert_eq!(again.labs().await.unwrap().len(), 15);
    let e = match History::open(dir.join("no/such/folder/h.db").to_str().unwrap()).await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("opened"),
    };
    assert!(e.contains("no folder"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A PostgreSQL server of its own: initdb in a fresh folder, started by pid, stopped on drop.
struct Postgres {
    child: Child,
    dir: PathBuf,
    url: String,
}

impl Postgres {
    fn start() -> Postgres {
        Postgres::start_with("plain", |_| Vec::new())
    }

    /// A server in a folder of its own named `name`, started with the settings `extra` gives
    /// (which may write files into the folder first).
    fn start_with(name: &str, extra: impl FnOnce(&std::path::Path) -> Vec<String>) -> Postgres {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()
            .and_then(|d| d.filter_map(Result::ok).map(|e| e.path().join("bin")).find(|b| b.join("initdb").exists()))
            .expect("PostgreSQL is not installed: Debian's postgresql package (scripts/test-all installs it)");
        let dir = std::env::temp_dir().join(format!("loadlab-pg-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let extra = extra(&dir);
        // PostgreSQL refuses to run as root: as Debian's postgres user when we are root.
        let root = nix_is_root();
        let as_user = |program: PathBuf| -> Command {
            if root {
                let _ = Command::new("chown").arg("-R").arg("postgres:postgres").arg(&dir).status();
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(program);
                c
            } else {
                Command::new(program)
            }
        };
        let data = dir.join("data");
        let out = as_user(bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", "loadlab", "--no-sync", "--no-locale", "-E", "UTF8"])
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = as_user(bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-k"])
            .arg(&dir)
            .args(["-c", "fsync=off"])
            .args(extra.iter().flat_map(|e| ["-c", e.as_str()]))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "PostgreSQL did not listen on {port} within 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        Postgres { child, dir, url: format!("postgres://loadlab@127.0.0.1:{port}/postgres") }
    }
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // runuser passes SIGTERM on to postgres: a smart shutdown, then the folder goes.
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test]
async fn a_postgres_history_holds_the_same_and_says_why_it_cannot_connect() {
    let pg = Postgres::start();
    // Ready to accept does not mean ready for queries: retry the first connection briefly.
    let deadline = Instant::now() + Duration::from_secs(30);
    let h = loop {
        match History::open(&pg.url).await {
            Ok(h) => break h,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{e}"),
        }
    };
    // Four first uses of an empty database at once: every one opens it, and every lab is kept.
    let (client, connection) = tokio_postgres::connect(&pg.url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.batch_execute("CREATE DATABASE race").await.unwrap();
    let race = pg.url.replace("/postgres", "/race");
    let opened = tokio::join!(History::open(&race), History::open(&race), History::open(&race), History::open(&race));
    let writers = [opened.0.unwrap(), opened.1.unwrap(), opened.2.unwrap(), opened.3.unwrap()];
    let adds: Vec<_> = writers
        .into_iter()
        .enumerate()
        .map(|(w, mut h)| {
            tokio::spawn(async move {
                for n in 0..25 {
                    assert!(matches!(h.add(&same_second(w, n)).await.unwrap(), Added::New(_)));
                }
                h
            })
        })
        .collect();
    let mut last = None;
    for a in adds {
        last = Some(a.await.unwrap());
    }
    assert_eq!(last.unwrap().labs().await.unwrap().len(), 100, "every lab of four writers at once");
    // Schema 2's database: upgraded when opened.
    client.batch_execute("CREATE DATABASE old").await.unwrap();
    let old = pg.url.replace("/postgres", "/old");
    {
        let (c, connection) = tokio_postgres::connect(&old, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        let mut all = history::tables_of_schema_2("BIGSERIAL PRIMARY KEY");
        all.extend(OLD_LAB.map(str::to_owned));
        for t in all {
            c.batch_execute(&t).await.unwrap();
        }
    }
    an_old_history_is_brought_up_to_date(History::open(&old).await.unwrap()).await;
    exercise(h).await;
    let again = History::open(&pg.url).await.unwrap();
    assert_eq!(again.labs().await.unwrap().len(), 15);
    let wrong = pg.url.replace("/postgres", "/nosuchdb");
    let e = match History::open(&wrong).await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("opened"),
    };
    assert!(e.contains("nosuchdb"), "{e}");
}

/// A CA, and a certificate it signed for `localhost` only (not for 127.0.0.1), in `dir`.
fn certificates(dir: &std::path::Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name.push(rcgen::DnType::CommonName, "loadlab test CA");
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let server = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let server = server.signed_by(&key, &ca, &ca_key).unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("server.pem"), server.pem()).unwrap();
    std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
    // PostgreSQL refuses a key others may read.
    std::fs::set_permissions(dir.join("server.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
    vec![
        "ssl=on".into(),
        format!("ssl_cert_file={}", dir.join("server.pem").display()),
        format!("ssl_key_file={}", dir.join("server.key").display()),
    ]
}

/// Opens `url` (a freshly started server may refuse queries for a moment).
async fn opened(url: &str) -> Result<History, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match History::open(url).await {
            Ok(h) => return Ok(h),
            Err(e) if Instant::now() < deadline && e.to_string().contains("starting up") => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

#[tokio::test]
async fn a_postgres_history_over_tls_checks_the_certificate_as_libpq_would() {
    let pg = Postgres::start_with("tls", certificates);
    let ca = pg.dir.join("ca.pem");
    let ca = ca.to_str().unwrap();
    // Encrypted without a check (`require`): the server sees a TLS connection.
    let h = opened(&format!("{}?sslmode=require", pg.url)).await.unwrap();
    let (client, connection) = tokio_postgres::connect(&pg.url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let tls: i64 = client.query_one("SELECT COUNT(*) FROM pg_stat_ssl WHERE ssl", &[]).await.unwrap().get(0);
    assert!(tls >= 1, "no connection over TLS");
    drop(h);
    // The CA given: the chain is checked; verify-full also checks the name connected to.
    opened(&format!("{}?sslmode=verify-ca&sslrootcert={ca}", pg.url)).await.unwrap();
    let by_name = pg.url.replace("127.0.0.1", "localhost");
    let h = opened(&format!("{by_name}?sslmode=verify-full&sslrootcert={ca}")).await.unwrap();
    assert_eq!(h.labs().await.unwrap().len(), 0);
    let e = opened(&format!("{}?sslmode=verify-full&sslrootcert={ca}", pg.url)).await.err().unwrap();
    assert!(e.contains("not valid for name") && e.contains("sslmode=verify-ca"), "{e}");
    // Not given: a certificate nobody trusts is refused in one line, saying what to do.
    let e = opened(&format!("{by_name}?sslmode=verify-full")).await.err().unwrap();
    assert!(e.contains("not trusted") && e.contains("sslrootcert=FILE") && !e.contains('\n'), "{e}");
    let e = opened(&format!("{}?sslmode=verify-full&sslrootcert=/no/such/ca.pem", pg.url)).await.err().unwrap();
    assert!(e.contains("sslrootcert=/no/such/ca.pem: no such file"), "{e}");
}

/// The certificate the PostgreSQL manual makes (`openssl req -new -x509 -nodes -subj
/// "/CN=localhost"`): self-signed, so a CA, its host in the common name alone.
fn manuals_certificate(dir: &std::path::Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.distinguished_name.push(rcgen::DnType::CommonName, "localhost");
    let cert = params.self_signed(&key).unwrap();
    std::fs::write(dir.join("server.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
    std::fs::set_permissions(dir.join("server.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
    vec![
        "ssl=on".into(),
        format!("ssl_cert_file={}", dir.join("server.crt").display()),
        format!("ssl_key_file={}", dir.join("server.key").display()),
    ]
}

#[tokio::test]
async fn a_postgres_history_trusts_the_manuals_self_signed_certificate_as_libpq_does() {
    let pg = Postgres::start_with("self-signed", manuals_certificate);
    let crt = pg.dir.join("server.crt");
    let crt = crt.to_str().unwrap();
    let by_name = pg.url.replace("127.0.0.1", "localhost");
    // The certificate given as its own root: trusted, for the name in its common name.
    let h = opened(&format!("{by_name}?sslmode=verify-full&sslrootcert={crt}")).await.unwrap();
    assert_eq!(h.labs().await.unwrap().len(), 0);
    let e = opened(&format!("{}?sslmode=verify-full&sslrootcert={crt}", pg.url)).await.err().unwrap();
    assert!(e.contains("not valid for name") && e.contains("sslmode=verify-ca"), "{e}");
    opened(&format!("{}?sslmode=verify-ca&sslrootcert={crt}", pg.url)).await.unwrap();
    // Another certificate given: this one is still not trusted.
    let other = pg.dir.join("other.crt");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.distinguished_name.push(rcgen::DnType::CommonName, "localhost");
    std::fs::write(&other, params.self_signed(&rcgen::KeyPair::generate().unwrap()).unwrap().pem()).unwrap();
    let e = opened(&format!("{by_name}?sslmode=verify-ca&sslrootcert={}", other.display())).await.err().unwrap();
    assert!(!e.contains('\n') && e.contains("CaUsedAsEndEntity") && e.contains("not in sslrootcert"), "{e}");
}
