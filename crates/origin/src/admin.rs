//! The admin API under `/_admin/`, as Origin Simulator has it, plus `metrics`.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use http::header::AUTHORIZATION;
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::time::Instant;

use crate::response::{full, Body, APPLICATION_JSON as JSON, TEXT_PLAIN as TEXT};
use crate::simulation::Simulation;
use crate::simulation::LATENCY_BUCKETS;

/// Largest recipe upload read.
const MAX_UPLOAD: usize = 64 << 20;

/// Who may use the admin API.
#[derive(Clone, Debug, Default)]
pub struct AdminPolicy {
    /// `Authorization: Bearer <token>` required.
    pub token: Option<String>,
    /// Serve `/_admin/` on this listener at all (false when a separate admin listener has it).
    pub enabled: bool,
    /// Answer admin requests from loopback peers only.
    pub loopback_only: bool,
}

pub(crate) async fn handle(req: Request<Incoming>, sim: &Simulation, policy: &AdminPolicy) -> Response<Body> {
    if let Some(token) = &policy.token {
        let ok = req
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| t.trim() == token);
        if !ok {
            let mut r = full(StatusCode::UNAUTHORIZED, TEXT, "admin API: missing or wrong bearer token");
            r.headers_mut().insert(http::header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
    }
    let path = req.uri().path().trim_start_matches("/_admin").to_owned();
    let method = req.method().clone();
    match (method, path.as_str()) {
        (Method::GET | Method::HEAD, "/status") => full(StatusCode::OK, TEXT, "ok!"),
        (Method::POST, "/add_recipe") => {
            let body = match http_body_util::Limited::new(req.into_body(), MAX_UPLOAD).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => return full(StatusCode::BAD_REQUEST, TEXT, format!("reading the recipe: {e}")),
            };
            match sim.upload(&body).await {
                Ok(()) => full(StatusCode::CREATED, JSON, sim.current_recipes().to_string()),
                Err(e) => full(StatusCode::BAD_REQUEST, TEXT, e.0),
            }
        }
        (Method::GET, "/current_recipe") => full(StatusCode::OK, JSON, sim.current_recipes().to_string()),
        (Method::GET, "/routes") => {
            let routes: Vec<String> = sim.table().routes.iter().map(|r| r.recipe.route.clone()).collect();
            full(StatusCode::OK, TEXT, routes.join("\n"))
        }
        (Method::GET, "/routes_status") => {
            let now = Instant::now();
            let lines: Vec<String> = sim
                .table()
                .routes
                .iter()
                .map(|r| {
                    let (status, latency) = r.status_now(now);
                    format!("{} {} {}", r.recipe.route, status, latency.show())
                })
                .collect();
            full(StatusCode::OK, TEXT, lines.join("\n"))
        }
        (Method::GET, "/restart") => {
            sim.restart().await;
            full(StatusCode::OK, TEXT, "ok!")
        }
        (Method::GET, "/current_count") => {
            let mut map = serde_json::Map::new();
            map.insert("total_requests".into(), sim.counters.current.total().into());
            for (k, v) in sim.counters.current.nonzero() {
                map.insert(k, v.into());
            }
            full(StatusCode::OK, JSON, serde_json::Value::Object(map).to_string())
        }
        (Method::GET, "/clear_current_count") => {
            sim.counters.clear_current();
            full(StatusCode::OK, JSON, r#"{"cleared":"yes"}"#)
        }
        (Method::GET, "/metrics") => full(StatusCode::OK, "text/plain; version=0.0.4; charset=utf-8", metrics(sim)),
        (
            _,
            "/status"
            | "/add_recipe"
            | "/current_recipe"
            | "/routes"
            | "/routes_status"
            | "/restart"
            | "/current_count"
            | "/clear_current_count"
            | "/metrics",
        ) => full(StatusCode::METHOD_NOT_ALLOWED, TEXT, "Method not allowed"),
        _ => full(StatusCode::NOT_FOUND, TEXT, "Not found"),
    }
}

/// Prometheus text format.
fn metrics(sim: &Simulation) -> String {
    let c = &sim.counters;
    let mut out = String::new();
    out += "# HELP loadlab_origin_requests_total Simulated requests by route and status (or fault).\n";
    out += "# TYPE loadlab_origin_requests_total counter\n";
    for (route, counts) in c.routes.lock().unwrap_or_else(|e| e.into_inner()).order.iter() {
        for (status, n) in counts.nonzero() {
            let route = route.replace('\\', "\\\\").replace('"', "\\\"");
            let _ = writeln!(out, "loadlab_origin_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}");
        }
    }
    out += "# HELP loadlab_origin_response_seconds Time to answer simulated requests, latency included.\n";
    out += "# TYPE loadlab_origin_response_seconds histogram\n";
    for (le, n) in LATENCY_BUCKETS.iter().zip(&c.latency_buckets) {
        let _ = writeln!(out, "loadlab_origin_response_seconds_bucket{{le=\"{le}\"}} {}", n.load(Ordering::Relaxed));
    }
    let count = c.latency_count.load(Ordering::Relaxed);
    let _ = writeln!(out, "loadlab_origin_response_seconds_bucket{{le=\"+Inf\"}} {count}");
    let _ =
        writeln!(out, "loadlab_origin_response_seconds_sum {}", c.latency_sum_us.load(Ordering::Relaxed) as f64 / 1e6);
    let _ = writeln!(out, "loadlab_origin_response_seconds_count {count}");
    out += "# HELP loadlab_origin_in_flight Simulated requests being answered now.\n";
    out += "# TYPE loadlab_origin_in_flight gauge\n";
    let _ = writeln!(out, "loadlab_origin_in_flight {}", c.in_flight.load(Ordering::Relaxed));
    out
}
