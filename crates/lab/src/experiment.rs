//! Runs a plan: brings up the embedded origin and the targets, samples them, runs every step in
//! order with a pause between them, takes everything down again (also on failure), and works out
//! the findings.

use std::path::Path;

use futures_core::future::LocalBoxFuture;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use report::chart::RunSeries;

pub(crate) use crate::lab_json::{Lab, TargetDeath};
use crate::outcome::{self, StepResult};
use crate::plan::matrix::{self, Matrix};
use crate::plan::{Plan, TargetKind};
use crate::run::capacity;
pub use crate::run::events::{Event, LabError, Watcher};
pub use crate::run::options::RunOptions;
use crate::run::sample::{self, Sampler, Source};
use crate::run::step;
pub(crate) use crate::run::systems::TargetRun;
use crate::run::systems::{self, Embedded, StartError, Started};
use crate::run::together::Duet;
use crate::run::{cpu, edges, placement, speed};
use profile::session::Session;
use profile::Profiler;
use tokio_util::sync::CancellationToken;

pub fn run<'a>(
    plan: &'a Plan,
    opts: &'a RunOptions,
    watch: &'a dyn Watcher,
) -> LocalBoxFuture<'a, Result<Lab, LabError>> {
    Box::pin(run_plan(plan, opts, watch))
}

async fn run_plan(plan: &Plan, opts: &RunOptions, watch: &dyn Watcher) -> Result<Lab, LabError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LabError::Io { path, source }
    };
    let steps_dir = opts.out.join("steps");
    let samples_dir = opts.out.join("samples");
    for d in [&opts.out, &steps_dir, &samples_dir] {
        std::fs::create_dir_all(d).map_err(io(d))?;
    }
    let started = Instant::now();
    // To the millisecond: steps are timed from this moment, and a lab is lined up with a
    // dashboard or a Prometheus server by it.
    let started_unix_s = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_millis() as f64 / 1000.0);
    let plan_run = if opts.quick { plan.quick() } else { plan.clone() };
    let plan = &plan_run;
    let matrix = matrix::expand(plan);
    // Every CPU this process may use, before loadlab's threads are pinned to some of them.
    let cpus = speed::allowed_cpus();
    // loadlab's threads on its CPUs while the lab runs (back where they were after), the
    // targets it starts on the others.
    // One lab of a duet takes the pair's placement; loadlab's threads are the caller's to pin.
    let (placement, placement_not) = match opts.duet.as_ref().map(|d| d.placement.clone()) {
        Some(Some(p)) => (Some((p, None)), None),
        Some(None) => (None, Some("shared: both builds of a duet where the scheduler put them".to_owned())),
        None => match placement::decide(plan, plan.load.placement) {
            Ok(p) => match placement::Pinned::to(&p.generator) {
                Ok(pinned) => (Some((p, Some(pinned))), None),
                Err(e) => (None, Some(format!("not split: {e}"))),
            },
            Err(why) => (None, Some(why)),
        },
    };
    let mut up = Up {
        placement: placement.as_ref().map(|(p, _)| p.clone()),
        probe: Some(speed::Probe::start(&cpus)),
        ..Up::default()
    };
    let result = async {
        up.bring_up(plan, &samples_dir, &opts.stop).await?;
        if let Some(d) = &opts.duet {
            // The other lab's steps count this lab's targets as known, not as other processes.
            d.offer(up.sources.iter().filter_map(Source::watched).collect());
        }
        let sampler = Sampler::start(up.sources.clone(), started);
        let steps = run_steps(plan, &matrix, &mut up, opts, &steps_dir, started, watch).await;
        let capacity = match (&steps, &plan.capacity) {
            (Ok(_), Some(spec)) => {
                let mut found = Vec::new();
                for t in up.targets.iter().filter(|_| !opts.stop.is_cancelled()) {
                    found.push(capacity::search_target(t, plan, spec, &steps_dir, opts, watch).await?);
                }
                found
            }
            _ => Vec::new(),
        };
        let samples = sampler.finish();
        Ok::<_, LabError>((steps?, capacity, samples))
    }
    .await;
    // Steps over (or never begun): the other lab of a duet goes on alone, and its steps still
    // read this lab's targets until they end.
    if let Some(d) = &opts.duet {
        d.done().await;
    }
    let targets = up.targets.clone();
    let deaths = std::mem::take(&mut up.deaths);
    up.take_down().await;
    let ((mut steps, series), capacity, samples) = result?;
    sample::write_csv(&samples, &samples_dir).map_err(io(&samples_dir))?;
    for s in &mut steps {
        let name = &plan.targets[s.target].name;
        // CPU read at the step's edges wins over the once-a-second samples around it; a step
        // whose CPU was found not to be a measurement takes none from them either.
        if let Some(rows) = samples.get(name) {
            // A restart between the edges can leave the end's counter above the start's: the
            // once-a-second samples saw it go back.
            let restarted = rows.iter().any(|r| {
                r.t >= s.started_s && r.t <= s.ended_s + 0.5 && r.series.contains_key(sample::COUNTER_WENT_BACK)
            });
            if restarted {
                (s.target_cpu_s, s.target_cpu_pct) = (None, None);
                s.target_cpu_unmeasured =
                    Some("the CPU counter went back during the step: the target restarted".into());
            }
            let (cpu, rss) = sample::window(rows, s.started_s, s.ended_s);
            if s.target_cpu_unmeasured.is_none() {
                s.target_cpu_pct = s.target_cpu_pct.or(cpu);
            }
            s.target_rss_mb = rss.or(s.target_rss_mb);
        }
        if let Some(rows) = samples.get("generator") {
            s.generator_cpu_pct = s.generator_cpu_pct.or(sample::window(rows, s.started_s, s.ended_s).0);
        }
    }
    let findings = outcome::find(plan, &matrix, &mut steps);
    let not_run = matrix.steps.iter().filter(|s| !steps.iter().any(|r| r.id == s.id)).map(|s| s.id.clone()).collect();
    Ok(Lab {
        format: crate::lab_json::FORMAT,
        id: Some(uuid::Uuid::new_v4().to_string()),
        name: plan.name.clone(),
        question: plan.question.clone(),
        started_unix_s,
        wall_s: started.elapsed().as_secs_f64(),
        quick: opts.quick,
        duration_s: plan.load.duration.as_secs_f64(),
        warmup_s: plan.load.warmup.as_secs_f64(),
        repeats: plan.load.repeats,
        targets,
        matrix,
        steps,
        findings,
        capacity,
        deaths,
        interrupted: opts.stop.is_cancelled() || opts.abort.is_cancelled(),
        not_run,
        provenance: opts.provenance.clone(),
        placement: placement.map(|(p, _pinned)| p),
        placement_not,
        samples,
        series,
        plan: plan.clone(),
    })
}

type StepsAndSeries = (Vec<StepResult>, Vec<(usize, RunSeries)>);

async fn run_steps(
    plan: &Plan,
    matrix: &Matrix,
    up: &mut Up,
    opts: &RunOptions,
    dir: &Path,
    started: Instant,
    watch: &dyn Watcher,
) -> Result<StepsAndSeries, LabError> {
    let load = &plan.load;
    let mut results = Vec::new();
    let mut series = Vec::new();
    let mut variant_loaded: Option<&str> = None;
    let ids: Vec<String> = matrix.steps.iter().map(|s| s.id.clone()).collect();
    watch.event(&Event::Planned { ids: &ids });
    if let Some(tr) = &up.tracing {
        watch.event(&Event::Receiving { endpoint: &tr.endpoint() });
    }
    for (i, s) in matrix.steps.iter().enumerate() {
        if opts.stop.is_cancelled() {
            break;
        }
        let point = &matrix.points[s.point];
        let variant = point.variant.as_deref().and_then(|v| plan.variants.iter().find(|x| x.name == v));
        if let Some(v) = variant.filter(|v| variant_loaded != Some(v.name.as_str())) {
            if let Some(recipe) = &v.recipe {
                up.load_variant(recipe).await?;
            }
            variant_loaded = Some(&v.name);
        }
        let last = results.last().map(|r: &StepResult| r.id.clone());
        up.check_deaths(last.as_deref(), started);
        if let Some(down) = up.down(s.target) {
            // Nothing to measure: the step is recorded as not run, and why.
            watch.event(&Event::Skipped { index: i, of: matrix.steps.len(), id: &s.id, why: &down });
            results.push(StepResult::not_run(s, started.elapsed().as_secs_f64(), down));
            continue;
        }
        let target = &up.targets[s.target];
        watch.event(&Event::Started { index: i, of: matrix.steps.len(), id: &s.id });
        let mut config =
            step::config(&s.id, &target.url, point, load, variant, load.warmup + load.duration, &target.tls)
                .map_err(|message| step::StepError { step: s.id.clone(), message })?;
        // Each step's requests get trace ids of their own (the key is in its results file).
        config.trace = target.traces.then(results::trace::TraceKey::random);
        if let (Some(key), Some(tr)) = (config.trace, &up.tracing) {
            tr.register(key);
        }
        let trace_key = config.trace;
        let file = dir.join(&s.file);
        let stem = s.file.trim_end_matches(".llr").to_owned();
        let profiling =
            up.profilers[s.target].as_ref().filter(|_| s.repeat == 0 || plan.profile.all_repeats).map(|(how, pids)| {
                Session::begin(
                    how,
                    pids.clone(),
                    &plan.profile,
                    &opts.out,
                    &stem,
                    &target.name,
                    load.warmup,
                    load.duration,
                )
            });
        // A lab of a duet starts its step with the other's, at the moment they agree on.
        let begins = match &opts.duet {
            Some(d) => {
                let every = point.rate.filter(|r| *r > 0.0).map(|r| std::time::Duration::from_secs_f64(1.0 / r));
                Some(d.arrive(i, every).await)
            }
            None => None,
        };
        config.start_at = begins;
        let lead = begins.and_then(|b| b.duration_since(SystemTime::now()).ok()).unwrap_or_default();
        let from = started.elapsed().as_secs_f64();
        let records = watch.records(&s.id, &config.gauges);
        // The target's and loadlab's CPU clocks (or the target's exporter), read as the warm-up
        // ends and as the step ends.
        let watched = up.cpu_watched(s.target);
        let companions = opts.duet.as_ref().map(Duet::companions).unwrap_or_default();
        let remote = up.remotes.get(s.target).cloned().flatten();
        let probed = up.probe.as_ref().map(speed::Probe::cpu_ns);
        let probe_ns = move || probed.as_ref().map_or(0, |p| p.load(std::sync::atomic::Ordering::Relaxed));
        let warmup_end = {
            let (watched, companions, remote, warmup, probe_ns) =
                (watched.clone(), companions.clone(), remote.clone(), load.warmup, probe_ns.clone());
            tokio::spawn(async move {
                tokio::time::sleep(lead + warmup).await;
                let edge = edges::Edge::read(&watched, &companions, remote.as_ref(), true).await;
                (edge, Instant::now(), probe_ns())
            })
        };
        // A second signal abandons the step: its file is left without its end marker.
        let ran = tokio::select! {
            ran = step::run(&s.id, config, load.warmup, &file, s.repeat == 0, records, opts.stop.clone()) => ran?,
            _ = opts.abort.cancelled() => break,
        };
        let mut speed = None;
        let used = match warmup_end.is_finished() {
            true => match warmup_end.await {
                Ok((from, from_at, from_probe_ns)) => {
                    let busy = remote.as_ref().map_or_else(Default::default, |r| r.host_limits);
                    let later = edges::Edge::read(&watched, &companions, remote.as_ref(), false).await;
                    let mut used = from.until(&later, busy, up.target_cpu_known(s.target));
                    // The probe's own CPU is not loadlab's work for the step.
                    let probe_s = probe_ns().saturating_sub(from_probe_ns) as f64 / 1e9;
                    let secs = from_at.elapsed().as_secs_f64();
                    if let Some((cpu_s, pct)) = used.generator.as_mut().filter(|_| secs > 0.0) {
                        *cpu_s = (*cpu_s - probe_s).max(0.0);
                        *pct = 100.0 * *cpu_s / secs;
                    }
                    let target_cpus = up.placement.as_ref().map_or(&[][..], |p| &p.targets[..]);
                    speed = up.probe.as_ref().and_then(|p| p.between(from_at, Instant::now(), target_cpus));
                    Some(used)
                }
                Err(_) => None,
            },
            false => {
                warmup_end.abort();
                None
            }
        };
        let edges::Used { target: target_cpu, generator: generator_cpu, target_rss_mb, unmeasured, host, machine } =
            used.unwrap_or_default();
        let (host, host_unmeasured) = match host {
            Some(Ok(h)) => (Some(h), None),
            Some(Err(e)) => (None, Some(e)),
            None => (None, None),
        };
        if opts.stop.is_cancelled() && ran.numbers.requests == 0 {
            // Interrupted before its warm-up ended: it measured nothing, so it is a step not run
            // (a 0% success here once read as the target failing its SLO). Its file is kept.
            let why = "interrupted during its warm-up: nothing measured";
            watch.event(&Event::Skipped { index: i, of: matrix.steps.len(), id: &s.id, why });
            break;
        }
        let to = started.elapsed().as_secs_f64();
        let left_out = host.as_ref().and_then(|h| h.neighbour.as_deref());
        let line = crate::measure::verdict::step_line(&plan.slo, &ran.numbers, left_out, unmeasured.as_deref());
        watch.event(&Event::Finished {
            index: i,
            of: matrix.steps.len(),
            id: &s.id,
            numbers: &ran.numbers,
            line: &line,
        });
        let (profile, profile_missing) = match profiling {
            None => (None, None),
            Some(p) => {
                let title = format!("{} at {}", target.name, point.label(&crate::plan::matrix::Axes::set_in(point)));
                let patterns: Vec<String> = plan.hypotheses.iter().filter_map(|h| h.function.clone()).collect();
                let ended = p.end(ran.numbers.successes, &plan.profile, &patterns, &opts.out, &stem, &title).await;
                let line = match &ended {
                    Ok(p) => p.line(),
                    Err(e) => e.clone(),
                };
                watch.event(&Event::Profile { id: &s.id, line: &line });
                match ended {
                    Ok(p) => (Some(p), None),
                    Err(e) => (None, Some(e)),
                }
            }
        };
        let traces = match (trace_key, &up.tracing) {
            (Some(key), Some(tr)) => {
                let t = tr.after_step(key, &file, load.warmup.as_micros() as u64, &opts.stop).await;
                watch.event(&Event::Spans { id: &s.id, line: &t.line() });
                Some(t)
            }
            _ => None,
        };
        if let Some(r) = ran.series {
            series.push((results.len(), r));
        }
        results.push(StepResult {
            id: s.id.clone(),
            target: s.target,
            point: s.point,
            repeat: s.repeat,
            file: format!("steps/{}", s.file),
            numbers: ran.numbers,
            warmup_requests: ran.warmup_requests,
            started_s: from + load.warmup.as_secs_f64(),
            ended_s: to,
            target_cpu_pct: target_cpu.map(|c| c.1),
            target_rss_mb,
            generator_cpu_pct: generator_cpu.map(|c| c.1),
            target_cpu_s: target_cpu.map(|c| c.0),
            generator_cpu_s: generator_cpu.map(|c| c.0),
            target_cpu_unmeasured: unmeasured,
            host,
            host_unmeasured,
            machine,
            speed,
            down: None,
            uncounted: None,
            profile,
            profile_missing,
            traces,
            text: ran.text,
            windows: ran.windows,
        });
        if i + 1 < matrix.steps.len() {
            tokio::select! {
                _ = tokio::time::sleep(load.pause) => {}
                _ = opts.stop.cancelled() => {}
            }
        }
    }
    let last = results.last().map(|r: &StepResult| r.id.clone());
    up.check_deaths(last.as_deref(), started);
    Ok((results, series))
}

/// What the lab brought up, to take down.
#[derive(Default)]
struct Up {
    origin: Option<Embedded>,
    simulators: Vec<Embedded>,
    started: Vec<Started>,
    /// Per target, its index in `started` (a command the lab started).
    started_of: Vec<Option<usize>>,
    targets: Vec<TargetRun>,
    sources: Vec<Source>,
    deaths: Vec<TargetDeath>,
    /// Per target, how it is profiled and its process (none when it is not).
    profilers: Vec<Option<(Profiler, Vec<u32>)>>,
    /// Per target, the exporter it is measured by (none: its processes here, if any).
    remotes: Vec<Option<scrape::Remote>>,
    /// The CPUs the targets it starts run on, when the lab splits them.
    placement: Option<placement::Placement>,
    /// The spans' receiver, when a target is traced.
    tracing: Option<crate::run::traced::Tracing>,
    /// The machine's speed on each CPU.
    probe: Option<speed::Probe>,
}

impl Up {
    async fn bring_up(&mut self, plan: &Plan, samples: &Path, stop: &CancellationToken) -> Result<(), StartError> {
        if let Some(o) = &plan.origin {
            self.origin = Some(Embedded::start(o.listen.as_deref(), o.recipe.as_deref(), false).await?);
        }
        self.tracing = crate::run::traced::Tracing::start_for(plan)
            .await
            .map_err(|e| StartError(format!("the spans' receiver: {e}")))?;
        for t in &plan.targets {
            let mut metrics = t.metrics.clone();
            let mut tls = t.tls.clone();
            let mut given_port = None;
            let mut named = None;
            let (url, kind, pid) = match &t.kind {
                TargetKind::Running { url, pid, process } => {
                    named = process.clone().filter(|_| pid.is_none());
                    (url.clone(), "running", *pid)
                }
                TargetKind::Command { url, start, ready, dir } => {
                    // A port from the kernel, picked just before the start, so runs side by side
                    // (and tests in parallel) never meet on a port written in the plan.
                    let port = match t.uses_port_placeholder() {
                        true => Some(
                            systems::free_loopback_port()
                                .map_err(|e| StartError(format!("target {}: no free port: {e}", t.name)))?,
                        ),
                        false => None,
                    };
                    let url = crate::plan::fill_port(url, port);
                    given_port = port;
                    metrics = t.metrics.as_deref().map(|m| crate::plan::fill_port(m, port));
                    let s = Started::start(
                        &t.name,
                        &systems::expand_argv(start, port),
                        self.placement.as_ref(),
                        dir,
                        &systems::log_path(samples, &t.name),
                        &url,
                        &self.tracing.as_ref().filter(|_| t.traces).map_or_else(Vec::new, |tr| tr.env(&t.name)),
                        systems::Readiness {
                            probe: ready.as_deref().map(|r| crate::plan::fill_port(r, port)).as_deref(),
                            tls: &t.tls,
                        },
                        stop,
                    )
                    .await?;
                    let pid = s.pid();
                    self.started_of.push(Some(self.started.len()));
                    self.started.push(s);
                    (url, "started", Some(pid))
                }
                TargetKind::Simulator { recipe } => {
                    let h3 = plan.load.protocol.contains(&attack::Protocol::Http3);
                    let e = Embedded::start(None, Some(recipe), h3).await?;
                    let url = format!("http://{}{}", e.addr, t.path);
                    if let Some(pem) = &e.h3_cert_pem {
                        // Its HTTP/3 steps trust the certificate it made, and only that.
                        let cert = samples.join(format!("{}-origin-cert.pem", crate::plan::matrix::slug(&t.name)));
                        std::fs::write(&cert, pem).map_err(|e| StartError(format!("{}: {e}", cert.display())))?;
                        tls.root_certs.push(cert);
                    }
                    self.simulators.push(e);
                    (url, "simulator", None)
                }
            };
            if self.started_of.len() < self.targets.len() + 1 {
                self.started_of.push(None);
            }
            let profiler = t.profile.as_ref().map(|p| match p {
                Profiler::Pprof { url } => Profiler::Pprof { url: crate::plan::fill_port(url, given_port) },
                other => other.clone(),
            });
            self.profilers.push(profiler.map(|p| (p, pid.into_iter().collect())));
            let remote = match &t.measure {
                Some(m) => {
                    let mut m = m.clone();
                    if let scrape::Source::Exporter(url) = &mut m.source {
                        *url = crate::plan::fill_port(url, given_port);
                    }
                    let fail = |e: String| StartError(format!("target {}: measure: {e}", t.name));
                    m.check().await.map_err(fail)?;
                    // A server's samples are as old as its last scrape: a step's counted time
                    // must hold three of them to read a rate between two.
                    if let scrape::Source::Prometheus(p) = &m.source {
                        let interval = p.interval.unwrap_or_default();
                        if plan.load.duration < interval * 3 {
                            return Err(fail(format!(
                                "{} scrapes every {interval:.0?}: a step of {:.0?} is too short to read a rate from; \
                                 make [load] duration at least {:.0?}",
                                p.shown(),
                                plan.load.duration,
                                interval * 3
                            )));
                        }
                    }
                    Some(m)
                }
                None => None,
            };
            self.remotes.push(remote.clone());
            if pid.is_some() || named.is_some() || metrics.is_some() || remote.is_some() {
                let process = named.clone();
                self.sources.push(Source {
                    name: t.name.clone(),
                    pid,
                    process,
                    tree: true,
                    metrics,
                    series: t.series.clone(),
                    remote: remote.clone(),
                });
            }
            self.targets.push(TargetRun {
                name: t.name.clone(),
                url,
                kind: kind.to_owned(),
                sampled: pid.is_some() || named.is_some(),
                measured_by: remote.as_ref().map(scrape::Remote::provenance),
                tls,
                traces: t.traces,
            });
        }
        Ok(())
    }

    /// Records every started target that has exited since the last look, as found after
    /// step `last`.
    fn check_deaths(&mut self, last: Option<&str>, origin: Instant) {
        for s in &mut self.started {
            if self.deaths.iter().any(|d| d.target == s.name) {
                continue;
            }
            if let Some(status) = s.exited() {
                self.deaths.push(TargetDeath {
                    target: s.name.clone(),
                    during: last.map(str::to_owned),
                    at_s: origin.elapsed().as_secs_f64(),
                    status,
                    log_tail: s.log_tail(10),
                });
            }
        }
    }

    /// The processes whose CPU a step of target `t` reads: the target's tree where it has a
    /// process here, then loadlab itself.
    fn cpu_watched(&self, t: usize) -> Vec<cpu::Watched> {
        let name = self.targets.get(t).map(|t| t.name.as_str());
        let target = self.sources.iter().find(|s| Some(s.name.as_str()) == name).and_then(Source::watched);
        target.into_iter().chain([cpu::Watched::Pid(std::process::id(), false)]).collect()
    }

    /// Whether the CPU target `t` uses on this machine is known: its processes here are read, it
    /// runs inside loadlab, or it runs elsewhere (measured by its exporter, or not on loopback).
    /// A target on loopback whose processes are not named would pass for other processes.
    fn target_cpu_known(&self, t: usize) -> bool {
        let Some(run) = self.targets.get(t) else { return false };
        let here =
            attack::target_from_url("GET", &run.url, &run.name, &Default::default()).is_ok_and(|t| t.is_loopback());
        run.kind == "simulator" || run.sampled || run.measured_by.is_some() || !here
    }

    /// Why target `t` cannot be measured any more, if it died.
    fn down(&self, t: usize) -> Option<String> {
        let s = &self.started[self.started_of.get(t).copied().flatten()?];
        self.deaths.iter().find(|d| d.target == s.name).map(TargetDeath::text)
    }

    /// A variant's recipe goes to the embedded origin, else to every embedded simulator target.
    async fn load_variant(&self, recipe: &Path) -> Result<(), StartError> {
        match &self.origin {
            Some(o) => systems::load_recipe(&o.sim, recipe).await,
            None => {
                for s in &self.simulators {
                    systems::load_recipe(&s.sim, recipe).await?;
                }
                Ok(())
            }
        }
    }

    async fn take_down(mut self) {
        for s in &mut self.started {
            s.stop();
        }
        for s in self.simulators.drain(..) {
            s.stop().await;
        }
        if let Some(o) = self.origin.take() {
            o.stop().await;
        }
    }
}
