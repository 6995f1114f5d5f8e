//! The admin API under `/_admin/`, as Origin Simulator has it, plus `metrics`.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Either, Full};
use hyper::body::Incoming;
use tokio::time::Instant;

use crate::server::{Body, Shared};
use crate::simulation::LATENCY_BUCKETS;

/// Largest recipe upload read.
const MAX_UPLOAD: usize = 64 << 20;

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Either::Left(Full::new(body.into())));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

const TEXT: &str = "text/plain; charset=utf-8";
const JSON: &str = "application/json; charset=utf-8";

pub async fn handle(req: Request<Incoming>, shared: &Shared) -> Response<Body> {
    if let Some(token) = &shared.admin.token {
        let ok = req
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| t.trim() == token);
        if !ok {
            let mut r = reply(StatusCode::UNAUTHORIZED, TEXT, "admin API: missing or wrong bearer token");
            r.headers_mut().insert(http::header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
    }
    let sim = &shared.sim;
    let path = req.uri().path().trim_start_matches("/_admin").to_owned();
    let method = req.method().clone();
    match (method, path.as_str()) {
        (Method::GET | Method::HEAD, "/status") => reply(StatusCode::OK, TEXT, "ok!"),
        (Method::POST, "/add_recipe") => {
            let body = match http_body_util::Limited::new(req.into_body(), MAX_UPLOAD).collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => return reply(StatusCode::BAD_REQUEST, TEXT, format!("reading the recipe: {e}")),
            };
            match sim.upload(&body).await {
                Ok(()) => reply(StatusCode::CREATED, JSON, sim.current_recipes().to_string()),
                Err(e) => reply(StatusCode::BAD_REQUEST, TEXT, e.0),
            }
        }
        (Method::GET, "/current_recipe") => reply(StatusCode::OK, JSON, sim.current_recipes().to_string()),
        (Method::GET, "/routes") => {
            let routes: Vec<String> = sim.table().routes.iter().map(|r| r.recipe.route.clone()).collect();
            reply(StatusCode::OK, TEXT, routes.join("\n"))
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
            reply(StatusCode::OK, TEXT, lines.join("\n"))
        }
        (Method::GET, "/restart") => {
            sim.restart().await;
            reply(StatusCode::OK, TEXT, "ok!")
        }
        (Method::GET, "/current_count") => {
            let mut map = serde_json::Map::new();
            map.insert("total_requests".into(), sim.counters.current.total().into());
            for (k, v) in sim.counters.current.nonzero() {
                map.insert(k, v.into());
            }
            reply(StatusCode::OK, JSON, serde_json::Value::Object(map).to_string())
        }
        (Method::GET, "/clear_current_count") => {
            sim.counters.clear_current();
            reply(StatusCode::OK, JSON, r#"{"cleared":"yes"}"#)
        }
        (Method::GET, "/metrics") => reply(StatusCode::OK, "text/plain; version=0.0.4; charset=utf-8", metrics(shared)),
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
        ) => reply(StatusCode::METHOD_NOT_ALLOWED, TEXT, "Method not allowed"),
        _ => reply(StatusCode::NOT_FOUND, TEXT, "Not found"),
    }
}

/// Prometheus text format.
fn metrics(shared: &Shared) -> String {
    let c = &shared.sim.counters;
    let mut out = String::new();
    out += "# HELP loadlab_origin_requests_total Simulated requests by route and status (or fault).\n";
    out += "# TYPE loadlab_origin_requests_total counter\n";
    for (route, counts) in c.routes.lock().unwrap_or_else(|e| e.into_inner()).iter() {
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
