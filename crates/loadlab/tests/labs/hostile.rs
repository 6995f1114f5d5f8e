//! A shared history against someone who writes hostile labs into it: no script from a lab's
//! data on the page, no control character reaching a terminal or a CSV, no impossible figure
//! kept, no known id quietly dropped, and links that lead to the labs from wherever the page is.

use std::path::Path;
use std::process::Output;

use crate::support::*;

/// Runs loadlab in `dir` with `args`.
fn run_in(dir: &Path, args: &[&str]) -> Output {
    loadlab().current_dir(dir).args(args).env_remove("LOADLAB_HISTORY").output().unwrap()
}

/// A copy of lab folder `from` at `to` with its lab.json changed by `edit`.
fn forged(from: &Path, to: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    std::fs::create_dir_all(to).unwrap();
    let mut lab: serde_json::Value = serde_json::from_slice(&std::fs::read(from.join("lab.json")).unwrap()).unwrap();
    edit(&mut lab);
    std::fs::write(to.join("lab.json"), serde_json::to_vec(&lab).unwrap()).unwrap();
    std::fs::copy(from.join("report.html"), to.join("report.html")).unwrap();
}

/// A change to a lab.json.
type Edit = Box<dyn FnOnce(&mut serde_json::Value)>;

/// Every latency of every step of `lab` set to `v`.
fn every_latency(lab: &mut serde_json::Value, v: f64) {
    for s in lab["steps"].as_array_mut().unwrap() {
        for l in ["latency", "ok_latency"] {
            for q in ["mean", "p50", "p90", "p95", "p99", "p999", "max"] {
                s["numbers"][l][q] = v.into();
            }
        }
    }
}

#[test]
fn hostile_labs_cannot_script_the_page_drive_the_terminal_or_switch_the_gate_off() {
    let d = tempdir("hostile");
    let svc = r#"{"route": "/*", "body": "x", "stages": [{"at": 0, "status": 200, "latency": "5ms"}]}"#;
    std::fs::write(d.join("svc.json"), svc).unwrap();
    let plan = "name = \"api\"\n[targets.svc]\norigin = \"svc.json\"\n[load]\nrate = 50\nduration = \"1s\"\nwarmup = \"200ms\"\n";
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    // Two real labs, recorded with paths relative to where CI ran them.
    for i in 0..2 {
        let (out, commit) = (format!("lab{i}"), format!("c{i}"));
        let o = run_in(&d, &["lab", "run", "plan.toml", "--out", &out, "--history", "h.db", "--commit", &commit]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let lab0 = d.join("lab0");
    // A folder named as a script, a branch that opens a comment in a script element, a tag that
    // closes one: all kept as data.
    let script_dir = "javascript:document.body.setAttribute('data-pwned',1)//x";
    forged(&lab0, &d.join(script_dir), |lab| {
        lab["id"] = "forged-1".into();
        lab["provenance"]["commit"] = "c2".into();
        lab["provenance"]["branch"] = "<!--<script>".into();
        lab["provenance"]["tags"] =
            serde_json::json!({"v": "</script><script>document.body.setAttribute('data-pwned',2)</script>"});
    });
    let o = run_in(&d, &["history", "add", script_dir, "--history", "h.db"]);
    assert!(o.status.success(), "{}", stderr(&o));

    // Refused, each in one line naming the field, nothing of it kept: a control character, an
    // impossible figure, a name past any terminal's width, a known id with other figures.
    let refusals: [(&str, Edit, &str); 6] = [
        ("escape", Box::new(|l| l["name"] = "api\u{1b}[2J\u{7}".into()), "plan: holds the control character"),
        ("negative", Box::new(|l| every_latency(l, -1.0)), "numbers.latency.mean: -1 is not a value a lab can measure"),
        ("huge", Box::new(|l| every_latency(l, 1e308)), "is not a value a lab can measure"),
        (
            "success",
            Box::new(|l| l["steps"][0]["numbers"]["success"] = 5.0.into()),
            "numbers.success: 5 is not a value a lab can measure",
        ),
        ("long", Box::new(|l| l["name"] = "p".repeat(65_536).into()), "plan: over 1000 characters"),
        ("conflict", Box::new(|l| every_latency(l, 9.0)), "conflicts with lab 1"),
    ];
    for (name, edit, why) in refusals {
        forged(&lab0, &d.join(name), |lab| {
            if name != "conflict" {
                lab["id"] = format!("forged-{name}").into();
            }
            edit(lab);
        });
        let o = run_in(&d, &["history", "add", name, "--history", "h.db"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(why) && err.contains("1 of 1 lab folders could not be added"), "{name}: {err}");
        assert!(!err.contains('\u{1b}'), "{name}: {err}");
    }
    let o = run_in(&d, &["history", "--history", "h.db"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("ppppp"), "nothing of a refused lab is kept: {}", stdout(&o));
    let o = run_in(&d, &["history", "show", "--csv", "--history", "h.db"]);
    assert!(o.status.success() && stdout(&o).lines().count() == 4, "{}", stdout(&o));

    // The page, written elsewhere: every chart drawn, no script run, every link a file path
    // that leads to its lab's report.
    let pages = d.join("site/pages");
    let o = run_in(&d, &["history", "show", "--json", "--history", "h.db", "--out", "site/pages"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let series = serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["series"].as_array().unwrap().len();
    let html = std::fs::read_to_string(pages.join("history.html")).unwrap();
    assert!(!html.contains("href=\"javascript"), "a link with a scheme");
    let probe = html.replace(
        "</body>",
        "<script>const links = [...document.querySelectorAll('a')].map(a => a.getAttribute('href'))\
         .filter(h => !h.startsWith('#'));\
         const data = JSON.parse(document.getElementById('data').textContent).labs.map(l => l[4]);\
         const all = links.concat(data);\
         document.body.setAttribute('data-schemes', [...new Set(all.map(h => new URL(h, location.href).protocol))].join(' '));\
         document.body.setAttribute('data-links', all.map(h => decodeURIComponent(new URL(h, location.href).pathname)).join('\\n'));\
         </script></body>",
    );
    std::fs::write(pages.join("probe.html"), probe).unwrap();
    let url = format!("file://{}", pages.join("probe.html").display());
    let dom = chromium(&["--virtual-time-budget=8000", "--dump-dom", &url], &d.join("profile"));
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    assert!(
        dom.contains(&format!("data-charts-drawn=\"{series}\"")),
        "charts not drawn: {}",
        &dom[..dom.len().min(800)]
    );
    assert!(!dom.contains("data-pwned=\"") && !dom.contains("data-errors=\""), "{}", &dom[..dom.len().min(800)]);
    assert!(dom.contains("data-schemes=\"file:\""), "{}", &dom[..dom.len().min(800)]);
    let links = dom.split("data-links=\"").nth(1).and_then(|t| t.split('"').next()).unwrap();
    let links: std::collections::BTreeSet<&str> = links.lines().collect();
    assert_eq!(links.len(), 3, "a link for each of the three labs: {links:?}");
    for l in links {
        assert!(Path::new(l).is_file(), "a link leads nowhere: {l}");
    }

    // An acceptance names one commit: a prefix of two is refused with both; what it says is
    // read by every terminal, so no control character.
    for (id, commit) in [("a", "abcdef1234"), ("b", "abcdef1299")] {
        forged(&lab0, &d.join(id), |lab| {
            lab["id"] = format!("forged-{id}").into();
            lab["provenance"]["commit"] = commit.into();
        });
        let o = run_in(&d, &["history", "add", id, "--history", "h.db"]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let o = run_in(&d, &["history", "accept", "abcdef12", "--reason", "on purpose", "--history", "h.db"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a prefix of 2 commits in the history (abcdef1234, abcdef1299)"), "{}", stderr(&o));
    let o = run_in(&d, &["history", "accept", "abcdef1234", "--reason", "ok\u{1b}[1A", "--history", "h.db"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--reason: holds a control character"), "{}", stderr(&o));
    // Not a history: an empty file (left as it was), a device behind a symlink (nothing written
    // beside it); and no NaN where a number is read.
    std::fs::write(d.join("empty.db"), "").unwrap();
    std::os::unix::fs::symlink("/dev/null", d.join("null.db")).unwrap();
    for (db, why) in [("empty.db", "an empty file, not a history"), ("null.db", "not a file (a device or a folder)")] {
        let o = run_in(&d, &["history", "show", "--history", db]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(why), "{}", stderr(&o));
    }
    assert_eq!(std::fs::metadata(d.join("empty.db")).unwrap().len(), 0);
    let o = run_in(&d, &["history", "show", "--min-change", "NaN", "--history", "h.db"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}
