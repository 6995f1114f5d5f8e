//! `loadlab attack`: turns flags into an `attack::AttackConfig` and runs it.

use std::io::{IsTerminal, Read, Write};
use std::time::Duration;

use anyhow::Context;
use attack::{AttackConfig, ClientOptions, Model, Protocol, Rate, Schedule, SinkOptions, TargetDefaults, TargetFormat};
use bytes::Bytes;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::cli::AttackArgs;
use crate::{bad, BadInput};

fn duration(flag: &str, s: &str) -> anyhow::Result<Duration> {
    attack::duration::parse(s).map_err(|e| bad(format!("--{flag}: {e}")))
}

fn rate(flag: &str, s: &str) -> anyhow::Result<f64> {
    let r: Rate = s.parse().map_err(|e| bad(format!("--{flag}: {e}")))?;
    Ok(r.0)
}

fn model(a: &AttackArgs) -> anyhow::Result<Model> {
    let dur = a.duration.as_deref().map(|d| duration("duration", d)).transpose()?;
    if let Some(steps) = &a.rate_steps {
        if a.rate.is_some() {
            return Err(bad("--rate and --rate-steps exclude each other"));
        }
        let (rates, step) =
            steps.split_once('@').ok_or_else(|| bad(format!("--rate-steps {steps:?}: expected RATE,RATE,...@STEP")))?;
        let rates = rates.split(',').map(|r| rate("rate-steps", r.trim())).collect::<anyhow::Result<Vec<_>>>()?;
        let step = duration("rate-steps", step)?;
        if step.is_zero() {
            return Err(bad("--rate-steps: the step must be longer than 0"));
        }
        return Ok(Model::Open { schedule: Schedule::steps(&rates, step, dur) });
    }
    if let Some(r) = &a.rate {
        let schedule = if let Some((from, to)) = r.split_once("..") {
            let ramp = a.ramp.as_deref().ok_or_else(|| bad("--rate A..B needs --ramp"))?;
            let ramp = duration("ramp", ramp)?;
            Schedule::ramp(rate("rate", from)?, rate("rate", to)?, ramp, dur.unwrap_or(ramp))
        } else {
            if a.ramp.is_some() {
                return Err(bad("--ramp needs --rate A..B"));
            }
            let d = dur.ok_or_else(|| bad("--rate needs --duration (every attack is bounded)"))?;
            Schedule::constant(rate("rate", r)?, d)
        };
        if schedule.total_hits() == 0 {
            return Err(bad("--rate: this schedule sends no request"));
        }
        return Ok(Model::Open { schedule });
    }
    if let Some(c) = a.connections {
        if a.requests.is_none() && dur.is_none() {
            return Err(bad("--connections needs --requests or --duration (every attack is bounded)"));
        }
        return Ok(Model::Closed { connections: c, streams: a.streams, requests: a.requests, duration: dur });
    }
    Err(bad("give --rate or --rate-steps (open model) or --connections (closed model)"))
}

fn targets(a: &AttackArgs) -> anyhow::Result<Vec<attack::Target>> {
    let mut defaults = TargetDefaults::default();
    for h in &a.headers {
        defaults.headers.push(attack::parse_header(h).map_err(|e| bad(format!("--header: {e}")))?);
    }
    if let Some(path) = &a.body {
        let body = std::fs::read(path).map_err(|e| bad(format!("--body {}: {e}", path.display())))?;
        defaults.body = Some(Bytes::from(body));
    }
    if let Some(url) = &a.url {
        if a.targets.is_some() {
            return Err(bad("give a URL or --targets, not both"));
        }
        let line = format!("{} {url}\n", a.method);
        return attack::parse_targets(&line, TargetFormat::Http, "argument", &defaults).map_err(|e| bad(e.to_string()));
    }
    let format: TargetFormat = a.format.parse().map_err(|e: String| bad(format!("--format: {e}")))?;
    let (text, name) = match a.targets.as_deref() {
        None | Some("-") => {
            if std::io::stdin().is_terminal() {
                return Err(bad("no targets: give a URL, --targets FILE, or pipe targets to stdin"));
            }
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).context("reading targets from stdin")?;
            (s, "stdin".to_owned())
        }
        Some(path) => (std::fs::read_to_string(path).map_err(|e| bad(format!("{path}: {e}")))?, path.to_owned()),
    };
    attack::parse_targets(&text, format, &name, &defaults).map_err(|e| bad(e.to_string()))
}

fn config(a: &AttackArgs) -> anyhow::Result<AttackConfig> {
    if a.http2 && a.h2c {
        return Err(bad("--http2 and --h2c exclude each other"));
    }
    let mut config = AttackConfig::new(targets(a)?, model(a)?);
    config.name = a.name.clone();
    config.client = ClientOptions {
        protocol: if a.h2c {
            Protocol::H2c
        } else if a.http2 {
            Protocol::Http2
        } else {
            Protocol::Http1
        },
        timeout: duration("timeout", &a.timeout)?,
        max_body: u64::try_from(a.max_body).ok(),
        redirects: u32::try_from(a.redirects).ok(),
        keepalive: a.keepalive,
        connect_to: a.connect_to.clone(),
        tls: attack::TlsOptions {
            insecure: a.insecure,
            root_certs: a.root_certs.clone(),
            cert: a.cert.clone(),
            key: a.key.clone(),
        },
    };
    if config.client.timeout.is_zero() {
        return Err(bad("--timeout must be longer than 0"));
    }
    config.workers = a.workers.max(1);
    config.max_workers = a.max_workers;
    if a.rate.is_some() || a.rate_steps.is_some() {
        config.h2_connections = a.connections.unwrap_or(1);
    }
    config.requests_per_conn = a.requests_per_conn;
    let settings = json!({
        "rate": a.rate, "ramp": a.ramp, "rate_steps": a.rate_steps, "duration": a.duration,
        "connections": a.connections, "streams": a.streams, "requests": a.requests,
        "requests_per_conn": a.requests_per_conn, "max_workers": a.max_workers,
        "protocol": format!("{:?}", config.client.protocol), "timeout": a.timeout,
        "max_body": a.max_body, "keepalive": a.keepalive, "headers": a.headers,
    });
    if let serde_json::Value::Object(map) = settings {
        config.settings = map.into_iter().filter(|(_, v)| !v.is_null()).collect();
    }
    Ok(config)
}

/// Resolves on SIGINT or SIGTERM.
async fn signalled() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

pub fn run(a: AttackArgs) -> anyhow::Result<()> {
    let config = config(&a)?;
    let out: Box<dyn Write + Send> = if a.output == "-" {
        Box::new(std::io::stdout())
    } else {
        Box::new(std::fs::File::create(&a.output).map_err(|e| bad(format!("--output {}: {e}", a.output)))?)
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let stop = CancellationToken::new();
        let on_signal = stop.clone();
        tokio::spawn(async move {
            signalled().await;
            eprintln!("loadlab: stopping, waiting for requests in flight (again to quit at once)");
            on_signal.cancel();
            signalled().await;
            std::process::exit(130);
        });
        let sink = SinkOptions { progress: std::io::stderr().is_terminal(), ..Default::default() };
        match attack::run(config, out, stop, sink).await {
            Ok(_) => Ok(()),
            Err(attack::AttackError::Config(e)) => Err(anyhow::Error::new(BadInput(e))),
            Err(e) => Err(e.into()),
        }
    })
}
