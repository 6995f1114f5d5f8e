//! Axes to steps: every combination of the plan's lists (rates or connections, protocols,
//! requests per connection, streams, variants), for every target, repeated. Repeats are
//! interleaved (all steps once, then again) and targets alternate within a load point, so a
//! drift of the machine over the run spreads over every target instead of favouring one.

use attack::Protocol;
use serde::{Deserialize, Serialize};

use crate::plan::Plan;

/// One load point: everything a step sets but its target and repeat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub variant: Option<String>,
    /// Open model when set.
    pub rate: Option<f64>,
    /// A replay of the plan's log, this many times faster, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// Closed model: connections; open model over HTTP/2: the connections shared.
    pub connections: Option<usize>,
    pub protocol: Protocol,
    pub requests_per_conn: Option<u64>,
    pub streams: usize,
}

pub(crate) fn protocol_text(p: Protocol) -> &'static str {
    p.name()
}

/// Which of a point's fields vary in the plan, to name points and pivot tables by them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Axes {
    pub variant: bool,
    pub rate: bool,
    pub speed: bool,
    pub connections: bool,
    pub protocol: bool,
    pub requests_per_conn: bool,
    pub streams: bool,
}

impl Axes {
    /// The fields a point sets (a rate, a variant, more than one stream...), to name one point
    /// alone, as `lab compare` does: `fast, 400 req/s, h2c, 8 conns`.
    pub fn set_in(p: &Point) -> Axes {
        Axes {
            variant: p.variant.is_some(),
            rate: p.rate.is_some(),
            speed: p.speed.is_some(),
            connections: p.connections.is_some(),
            protocol: true,
            requests_per_conn: p.requests_per_conn.is_some(),
            streams: p.streams > 1,
        }
    }
}

impl Point {
    /// The varying fields, `rate=400 protocol=h2c`; `all` names every field set.
    pub fn label(&self, axes: &Axes) -> String {
        let mut parts = Vec::new();
        if let Some(v) = self.variant.as_ref().filter(|_| axes.variant) {
            parts.push(v.clone());
        }
        if let Some(r) = self.rate.filter(|_| axes.rate) {
            parts.push(format!("{r} req/s"));
        }
        if let Some(s) = self.speed.filter(|_| axes.speed) {
            parts.push(format!("replay {s}x"));
        }
        if let Some(c) = self.connections.filter(|_| axes.connections) {
            parts.push(format!("{c} conns"));
        }
        if axes.protocol {
            parts.push(protocol_text(self.protocol).to_owned());
        }
        if axes.requests_per_conn {
            parts.push(self.requests_per_conn.map_or("keep-alive".to_owned(), |k| format!("{k} req/conn")));
        }
        if axes.streams {
            parts.push(format!("{} streams", self.streams));
        }
        if parts.is_empty() {
            "all".to_owned()
        } else {
            parts.join(", ")
        }
    }

    /// A file-name-safe form of the full point.
    pub fn slug(&self) -> String {
        let mut s = String::new();
        if let Some(v) = &self.variant {
            s += &format!("{}-", slug(v));
        }
        if let Some(r) = self.rate {
            s += &format!("r{r}-");
        }
        if let Some(x) = self.speed {
            s += &format!("x{x}-");
        }
        if let Some(c) = self.connections {
            s += &format!("c{c}-");
        }
        s += protocol_text(self.protocol);
        if let Some(k) = self.requests_per_conn {
            s += &format!("-k{k}");
        }
        if self.streams > 1 {
            s += &format!("-s{}", self.streams);
        }
        s
    }
}

pub(crate) use crate::plan::slug;

/// A step: one attack.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// `target--point--N`.
    pub id: String,
    /// The results file's name: the step's place in the run, then its id
    /// (`07-c5--r400-http1--2.llr`), so a listing sorts in run order.
    pub file: String,
    /// Index into the plan's targets.
    pub target: usize,
    /// Index into [`Matrix::points`].
    pub point: usize,
    /// 0-based.
    pub repeat: u32,
}

/// The plan's steps in run order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Matrix {
    pub axes: Axes,
    pub points: Vec<Point>,
    pub steps: Vec<Step>,
}

pub fn expand(plan: &Plan) -> Matrix {
    let l = &plan.load;
    let variants: Vec<Option<String>> = if plan.variants.is_empty() {
        vec![None]
    } else {
        plan.variants.iter().map(|v| Some(v.name.clone())).collect()
    };
    let open = !l.rate.is_empty();
    let rates: Vec<Option<f64>> = if open { l.rate.iter().copied().map(Some).collect() } else { vec![None] };
    let conns: Vec<Option<usize>> =
        if l.connections.is_empty() { vec![None] } else { l.connections.iter().copied().map(Some).collect() };
    let speeds: Vec<Option<f64>> = match &l.replay {
        Some(_) => l.speed.iter().copied().map(Some).collect(),
        None => vec![None],
    };
    let mut points = Vec::new();
    // A plan with only a capacity search has no fixed steps.
    let fixed = open || !l.connections.is_empty() || !l.speed.is_empty();
    for variant in variants.iter().filter(|_| fixed) {
        for &protocol in &l.protocol {
            for &requests_per_conn in &l.requests_per_conn {
                for &streams in &l.streams {
                    for &connections in &conns {
                        for &rate in &rates {
                            for &speed in &speeds {
                                points.push(Point {
                                    variant: variant.clone(),
                                    rate,
                                    speed,
                                    connections,
                                    protocol,
                                    requests_per_conn,
                                    streams,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    let axes = Axes {
        variant: variants.len() > 1,
        rate: rates.len() > 1,
        speed: speeds.len() > 1,
        connections: conns.len() > 1,
        protocol: l.protocol.len() > 1,
        requests_per_conn: l.requests_per_conn.len() > 1,
        streams: l.streams.len() > 1,
    };
    let mut steps = Vec::new();
    let width = (points.len() * plan.targets.len() * l.repeats as usize).to_string().len();
    for repeat in 0..l.repeats {
        for (p, point) in points.iter().enumerate() {
            for (t, target) in plan.targets.iter().enumerate() {
                let id = format!("{}--{}--{}", slug(&target.name), point.slug(), repeat + 1);
                steps.push(Step {
                    file: format!("{:0width$}-{id}.llr", steps.len() + 1),
                    id,
                    target: t,
                    point: p,
                    repeat,
                });
            }
        }
    }
    Matrix { axes, points, steps }
}

/// How many steps a plan expands to, without expanding it.
pub(crate) fn count(plan: &Plan) -> u128 {
    plan.step_count()
}

/// About how long a plan runs: its steps (warm-up, duration, the pause between), and a capacity
/// search's usual number of probes per target (growth from start to max, bisection to the
/// precision, a confirmation).
pub(crate) fn estimate(plan: &Plan) -> std::time::Duration {
    let l = &plan.load;
    let steps = count(plan) as f64;
    let mut secs = steps * (l.warmup + l.duration).as_secs_f64() + (steps - 1.0).max(0.0) * l.pause.as_secs_f64();
    if let Some(c) = &plan.capacity {
        let probes = (c.max / c.start).log2().ceil() + (1.0 / c.precision).log2().ceil() + 1.0;
        secs += plan.targets.len() as f64 * probes * c.probe.as_secs_f64();
    }
    std::time::Duration::from_secs_f64(secs.min(1e12))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(load: &str) -> Plan {
        let text = format!(
            "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[targets.b]\nurl = \"http://127.0.0.1:2/\"\n[load]\n{load}\n"
        );
        crate::plan::parse(&text, "t.toml", Path::new(".")).unwrap()
    }

    #[test]
    fn lists_multiply_and_repeats_interleave() {
        let m = expand(&plan(
            "connections = [1, 8, 64]\nprotocol = [\"http1\", \"h2c\"]\nrequests_per_conn = [1, 16]\nrepeats = 2",
        ));
        assert_eq!(m.points.len(), 3 * 2 * 2);
        assert_eq!(m.steps.len(), 12 * 2 * 2);
        assert_eq!(m.axes, Axes { connections: true, protocol: true, requests_per_conn: true, ..Default::default() });
        // Targets alternate at each point; the second repeat starts after every point ran once.
        assert_eq!((m.steps[0].target, m.steps[1].target, m.steps[0].point, m.steps[1].point), (0, 1, 0, 0));
        assert!(m.steps[..24].iter().all(|s| s.repeat == 0) && m.steps[24..].iter().all(|s| s.repeat == 1));
        let ids: std::collections::HashSet<&str> = m.steps.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids.len(), m.steps.len(), "step ids are unique");
        assert_eq!(m.steps[0].id, "a--c1-http1-k1--1");
        // Files sort in run order: 48 steps, two digits.
        assert_eq!(m.steps[0].file, "01-a--c1-http1-k1--1.llr");
        assert_eq!(m.steps[47].file, "48-b--c64-h2c-k16--2.llr");
        let files: std::collections::BTreeSet<&str> = m.steps.iter().map(|s| s.file.as_str()).collect();
        assert!(files.iter().zip(&m.steps).all(|(f, s)| *f == s.file), "sorted names are the run order");
        assert_eq!(
            count(&plan(
                "connections = [1, 8, 64]\nprotocol = [\"http1\", \"h2c\"]\nrequests_per_conn = [1, 16]\nrepeats = 2"
            )),
            48
        );
        assert_eq!(m.points[1].label(&m.axes), "8 conns, http1, 1 req/conn");
    }

    #[test]
    fn the_preview_counts_the_steps_the_run_makes() {
        let dir = std::env::temp_dir().join(format!("loadlab-matrix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("day.log"), "").unwrap();
        let text = "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[targets.b]\nurl = \"http://127.0.0.1:2/\"\n[load]\n";
        for load in [
            "replay = \"day.log\"\nspeed = [1, 4, 8]\nrepeats = 2",
            "replay = \"day.log\"",
            "rate = [10, 20]\nprotocol = [\"http1\", \"h2c\"]",
            "connections = [1, 8]\nstreams = [1, 4]\nprotocol = \"h2c\"",
        ] {
            let p = crate::plan::parse(&format!("{text}{load}\n"), "t.toml", &dir).unwrap();
            assert_eq!(count(&p), expand(&p).steps.len() as u128, "{load}");
        }
    }

    #[test]
    fn a_single_rate_is_one_point() {
        let m = expand(&plan("rate = 700"));
        assert_eq!((m.points.len(), m.steps.len()), (1, 2));
        assert_eq!(m.points[0].label(&m.axes), "all");
        assert_eq!(m.points[0].rate, Some(700.0));
    }
}
