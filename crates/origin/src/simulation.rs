//! The simulation: the loaded routes, each with its recipe, payload and load time. A request reads
//! the table through one atomic pointer load (no lock) and works out its stage from the time since
//! the recipe was loaded, so there are no stage timers: a re-posted or restarted route's old
//! schedule simply no longer exists.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio::time::Instant;

use crate::content::{build, gzip, planned_bytes, size_text, Payload};
use crate::recipe::{parse_upload, Latency, Recipe, RecipeError, Stage};

const STATUSES: usize = 600;
/// Fault kinds counted: reset, close, hang, slow_body.
const FAULTS: [&str; 4] = ["reset", "close", "hang", "slow_body"];

/// Counts by status (and fault), lock-free. The 600 status counters are made at the first
/// count: 100,000 routes that are never asked for cost no 480 MB.
#[derive(Default)]
pub struct StatusCounts {
    total: AtomicU64,
    by_status: std::sync::OnceLock<Box<[AtomicU64]>>,
    by_fault: [AtomicU64; 4],
}

impl StatusCounts {
    pub fn count(&self, outcome: Outcome) {
        self.total.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Outcome::Status(s) => self.statuses()[usize::from(s).min(STATUSES - 1)].fetch_add(1, Ordering::Relaxed),
            Outcome::Fault(name) => {
                let i = FAULTS.iter().position(|f| *f == name).unwrap_or(0);
                self.by_fault[i].fetch_add(1, Ordering::Relaxed)
            }
        };
    }

    fn statuses(&self) -> &[AtomicU64] {
        self.by_status.get_or_init(|| (0..STATUSES).map(|_| AtomicU64::new(0)).collect())
    }

    /// (label, count) of everything non-zero: statuses as numbers, faults by name.
    pub fn nonzero(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for (s, c) in self.by_status.get().into_iter().flat_map(|b| b.iter()).enumerate() {
            let c = c.load(Ordering::Relaxed);
            if c > 0 {
                out.push((s.to_string(), c));
            }
        }
        for (name, c) in FAULTS.iter().zip(&self.by_fault) {
            let c = c.load(Ordering::Relaxed);
            if c > 0 {
                out.push((name.to_string(), c));
            }
        }
        out
    }

    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    fn clear(&self) {
        self.total.store(0, Ordering::Relaxed);
        let statuses = self.by_status.get().into_iter().flat_map(|b| b.iter());
        statuses.chain(&self.by_fault).for_each(|c| c.store(0, Ordering::Relaxed));
    }
}

/// How a simulated request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Status(u16),
    Fault(&'static str),
}

/// Response-time histogram buckets (seconds), Prometheus style.
pub(crate) const LATENCY_BUCKETS: [f64; 12] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Counters served by `current_count` and `metrics`.
#[derive(Default)]
pub struct Counters {
    /// Since the last `clear_current_count`.
    pub current: StatusCounts,
    /// Per route, never cleared (Prometheus counters only go up).
    pub routes: Mutex<RouteCounts>,
    pub latency_buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    pub latency_sum_us: AtomicU64,
    pub latency_count: AtomicU64,
    pub in_flight: AtomicI64,
}

impl Counters {
    fn for_route(&self, route: &str) -> Arc<StatusCounts> {
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        let RouteCounts { order, index } = &mut *routes;
        let i = *index.entry(route.to_owned()).or_insert_with(|| {
            order.push((route.to_owned(), Arc::new(StatusCounts::default())));
            order.len() - 1
        });
        Arc::clone(&order[i].1)
    }

    pub fn observe(&self, seconds: f64) {
        for (i, le) in LATENCY_BUCKETS.iter().enumerate() {
            if seconds <= *le {
                self.latency_buckets[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_sum_us.fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
        self.latency_count.fetch_add(1, Ordering::Relaxed);
    }

    pub fn clear_current(&self) {
        self.current.clear();
    }
}

/// Each route's counts, in the order routes were first loaded.
#[derive(Default)]
pub struct RouteCounts {
    pub order: Vec<(String, Arc<StatusCounts>)>,
    index: HashMap<String, usize>,
}

/// A loaded route: everything a request needs, made at load time.
pub struct Route {
    pub recipe: Recipe,
    pub payload: Payload,
    /// Bytes the payload holds (against `--max-payload`).
    pub payload_bytes: u64,
    pub loaded_at: Instant,
    /// Recipe headers, ready to copy into responses.
    pub headers: HeaderMap,
    pub has_content_type: bool,
    pub gzip: bool,
    /// The 200 payload is gzipped as each response is sent (the recipe's `compress`).
    pub compress_each: bool,
    /// Whether the (uncompressed) 200 payload starts with `{`.
    pub payload_json: bool,
    /// Error bodies for the stage statuses, 404 and 304, gzipped when the recipe says so.
    error_bodies: HashMap<u16, Bytes>,
    pub counts: Arc<StatusCounts>,
    /// Per stage, the gate of a stage with a capacity.
    pub gates: Vec<Option<Gate>>,
}

/// A stage's capacity at run time: permits for the requests being served, and a count of those
/// waiting for one.
pub struct Gate {
    pub capacity: crate::recipe::Capacity,
    pub permits: tokio::sync::Semaphore,
    pub waiting: std::sync::atomic::AtomicU32,
}

impl Route {
    /// The stage in force `now`: the last one that has started.
    pub fn stage(&self, now: Instant) -> Option<&Stage> {
        self.stage_index(now).map(|i| &self.recipe.stages[i])
    }

    pub fn stage_index(&self, now: Instant) -> Option<usize> {
        let elapsed = now.saturating_duration_since(self.loaded_at);
        self.recipe.stages.iter().rposition(|s| s.at <= elapsed)
    }

    /// `(status, latency)` as `routes_status` shows them (406 before the first stage starts).
    pub fn status_now(&self, now: Instant) -> (u16, Latency) {
        self.stage(now).map_or((406, Latency::Fixed(0)), |s| (s.status, s.latency))
    }

    /// The body of a non-200 status (406 names the request path).
    pub fn error_body(&self, status: u16, path: &str) -> Bytes {
        if let Some(b) = self.error_bodies.get(&status) {
            return b.clone();
        }
        let text = error_text(status, path);
        if self.gzip {
            gzip(text.as_bytes())
        } else {
            Bytes::from(text)
        }
    }
}

/// Origin Simulator's bodies by status.
pub(crate) fn error_text(status: u16, path: &str) -> String {
    match status {
        304 => String::new(),
        404 => "Not found".to_owned(),
        406 => format!("Recipe not set at {path}, please POST a recipe for this route to /_admin/add_recipe"),
        s => format!("Error {s}"),
    }
}

/// The routes, as one immutable value swapped whole on every change.
#[derive(Default, Clone)]
pub struct Table {
    /// In load order.
    pub routes: Vec<Arc<Route>>,
    exact: HashMap<String, Arc<Route>>,
    /// Wildcard routes by prefix, longest first.
    prefixes: Vec<(String, Arc<Route>)>,
}

impl Table {
    fn from_routes(routes: Vec<Arc<Route>>) -> Table {
        let mut exact = HashMap::new();
        let mut prefixes = Vec::new();
        for r in &routes {
            match r.recipe.route.strip_suffix('*') {
                Some(prefix) => prefixes.push((prefix.to_owned(), Arc::clone(r))),
                None => {
                    exact.insert(r.recipe.route.clone(), Arc::clone(r));
                }
            }
        }
        prefixes.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
        Table { routes, exact, prefixes }
    }

    /// The route serving `path`: an exact route, else the longest matching prefix.
    pub fn find(&self, path: &str) -> Option<&Arc<Route>> {
        self.exact
            .get(path)
            .or_else(|| self.prefixes.iter().find(|(p, _)| path.starts_with(p.as_str())).map(|(_, r)| r))
    }
}

/// Default limit on the bytes all loaded payloads hold together.
pub const DEFAULT_MAX_PAYLOAD: u64 = 256 << 20;

/// The simulator's state.
pub struct Simulation {
    table: ArcSwap<Table>,
    /// Serialises table swaps (uploads, restarts); requests never take it, and payloads are
    /// made (and origins fetched) before it is taken.
    changing: tokio::sync::Mutex<()>,
    pub counters: Counters,
    /// Bytes all loaded payloads may hold together.
    max_payload: u64,
}

impl Simulation {
    /// A simulation serving the default recipe, with the default payload limit.
    pub async fn new() -> Arc<Simulation> {
        Simulation::with_max_payload(DEFAULT_MAX_PAYLOAD).await
    }

    pub async fn with_max_payload(max_payload: u64) -> Arc<Simulation> {
        let sim = Arc::new(Simulation {
            table: ArcSwap::from_pointee(Table::default()),
            changing: tokio::sync::Mutex::new(()),
            counters: Counters::default(),
            max_payload,
        });
        sim.restart().await;
        sim
    }

    pub fn table(&self) -> arc_swap::Guard<Arc<Table>> {
        self.table.load()
    }

    /// Validates and builds every recipe of an upload, then swaps them in at once. On any
    /// error nothing changes.
    pub async fn upload(&self, body: &[u8]) -> Result<(), RecipeError> {
        let recipes = parse_upload(body)?;
        let many = recipes.len() > 1;
        let name = |i: usize| if many { format!("recipe[{i}]") } else { "recipe".to_owned() };
        // The limit, checked before anything is made: what the routes kept hold, plus what
        // this upload says it will make.
        let replaced: std::collections::HashSet<String> = recipes.iter().map(|r| r.route.clone()).collect();
        let kept = self.kept_bytes(&replaced);
        let mut planned = kept;
        for (i, recipe) in recipes.iter().enumerate() {
            let (field, bytes) = planned_bytes(recipe);
            planned = planned.saturating_add(bytes);
            if planned > self.max_payload {
                return Err(self.over_limit(&format!("{}.{field}", name(i)), bytes, kept));
            }
        }
        let mut budget = self.max_payload - planned;
        let mut built = Vec::with_capacity(recipes.len());
        for (i, recipe) in recipes.into_iter().enumerate() {
            let (_, bytes) = planned_bytes(&recipe);
            let route = self.make_route(recipe, &name(i), budget).await?;
            budget = (budget + bytes).saturating_sub(route.payload_bytes);
            built.push(route);
        }
        let _guard = self.changing.lock().await;
        // Checked again with what was made, against the table as it is now.
        let kept = self.kept_bytes(&replaced);
        let made: u64 = built.iter().map(|r| r.payload_bytes).sum();
        if kept.saturating_add(made) > self.max_payload {
            return Err(self.over_limit("recipe", made, kept));
        }
        let mut routes: Vec<Arc<Route>> = self.table.load().routes.clone();
        // By name, not by scanning: 100,000 routes in one upload took 620 s when each looked
        // through all the others.
        let mut at: HashMap<String, usize> =
            routes.iter().enumerate().map(|(i, r)| (r.recipe.route.clone(), i)).collect();
        for new in built {
            match at.get(&new.recipe.route) {
                Some(&i) => routes[i] = new,
                None => {
                    at.insert(new.recipe.route.clone(), routes.len());
                    routes.push(new);
                }
            }
        }
        self.table.store(Arc::new(Table::from_routes(routes)));
        Ok(())
    }

    /// Bytes held by the loaded payloads of routes other than `replaced`.
    fn kept_bytes(&self, replaced: &std::collections::HashSet<String>) -> u64 {
        let table = self.table.load();
        table.routes.iter().filter(|r| !replaced.contains(&r.recipe.route)).map(|r| r.payload_bytes).sum()
    }

    fn over_limit(&self, field: &str, bytes: u64, kept: u64) -> RecipeError {
        RecipeError(format!(
            "{field}: {} of payload would go over the limit of {} ({} held by the other routes; origin --max-payload raises it)",
            size_text(bytes),
            size_text(self.max_payload),
            size_text(kept)
        ))
    }

    /// Back to the default recipe alone.
    pub async fn restart(&self) {
        let default = crate::default_recipe::recipe();
        let route = self.make_route(default, "default recipe", u64::MAX).await.expect("the default recipe is valid");
        let _guard = self.changing.lock().await;
        self.table.store(Arc::new(Table::from_routes(vec![route])));
    }

    async fn make_route(&self, recipe: Recipe, path: &str, budget: u64) -> Result<Arc<Route>, RecipeError> {
        let built = build(&recipe, path, budget).await?;
        let gz = recipe.gzip();
        let mut headers = HeaderMap::new();
        for (k, v) in &recipe.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| RecipeError(format!("{path}.headers.{k}: bad name")))?;
            let value = HeaderValue::from_str(v).map_err(|_| RecipeError(format!("{path}.headers.{k}: bad value")))?;
            headers.append(name, value);
        }
        let mut error_bodies = HashMap::new();
        let overflow = recipe.stages.iter().filter_map(|s| s.capacity.map(|c| c.overflow_status));
        for status in recipe.stages.iter().map(|s| s.status).chain(overflow).chain([404, 304]) {
            if status == 304 {
                // A 304 has no body to gzip.
                error_bodies.insert(status, Bytes::new());
            } else if status != 200 && status != 406 {
                let text = error_text(status, "");
                error_bodies.insert(status, if gz { gzip(text.as_bytes()) } else { Bytes::from(text) });
            }
        }
        Ok(Arc::new(Route {
            has_content_type: headers.contains_key(http::header::CONTENT_TYPE),
            headers,
            gzip: gz,
            compress_each: recipe.compress_per_request,
            payload_json: built.json,
            payload: built.payload,
            payload_bytes: built.bytes,
            loaded_at: Instant::now(),
            error_bodies,
            counts: self.counters.for_route(&recipe.route),
            gates: recipe
                .stages
                .iter()
                .map(|s| {
                    s.capacity.map(|capacity| Gate {
                        capacity,
                        permits: tokio::sync::Semaphore::new(capacity.concurrency as usize),
                        waiting: std::sync::atomic::AtomicU32::new(0),
                    })
                })
                .collect(),
            recipe,
        }))
    }

    /// Every loaded recipe as posted, in load order.
    pub fn current_recipes(&self) -> Value {
        Value::Array(self.table.load().routes.iter().map(|r| r.recipe.raw.clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn status(sim: &Simulation, path: &str) -> u16 {
        sim.table().find(path).expect("a route").status_now(Instant::now()).0
    }

    /// Minutes of stages, checked in an instant on tokio's paused clock.
    #[tokio::test(start_paused = true)]
    async fn stages_follow_the_clock_and_a_repost_starts_over() {
        let sim = Simulation::new().await;
        let staged = br#"{"route": "/news", "body": "x", "stages": [
            {"at": "10s", "status": 200}, {"at": "60s", "status": 503, "latency": "2s"}, {"at": "300s", "status": 200}]}"#;
        sim.upload(staged).await.unwrap();
        // Before the first stage: 406, as Origin Simulator answers.
        assert_eq!(status(&sim, "/news"), 406);
        let mut seen = Vec::new();
        for _ in 0..8 {
            tokio::time::advance(Duration::from_secs(45)).await;
            seen.push(status(&sim, "/news"));
        }
        // At 45 s, 90 s, ... 360 s.
        assert_eq!(seen, [200, 503, 503, 503, 503, 503, 200, 200]);
        let route = Arc::clone(sim.table().find("/news").unwrap());
        assert_eq!(route.status_now(Instant::now()).1, Latency::Fixed(0));

        // A re-post at 6 minutes starts the new schedule from its load; the old one is gone.
        sim.upload(
            br#"{"route": "/news", "body": "y", "stages": [{"at": 0, "status": 200}, {"at": "30s", "status": 500}]}"#,
        )
        .await
        .unwrap();
        assert_eq!(status(&sim, "/news"), 200);
        tokio::time::advance(Duration::from_secs(29)).await;
        assert_eq!(status(&sim, "/news"), 200);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(status(&sim, "/news"), 500);
        // The replaced route object still has its own (old) schedule: nothing refers to it.
        assert_eq!(Arc::strong_count(&route), 1);

        // Other routes keep their own load times: posting one does not restart another.
        sim.upload(br#"{"route": "/other", "body": "z", "stages": [{"at": 0, "status": 200}]}"#).await.unwrap();
        assert_eq!(status(&sim, "/news"), 500);
    }
}
