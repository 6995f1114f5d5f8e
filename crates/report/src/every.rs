//! `report --every`: results files followed while they grow (a run in progress), the report of
//! everything read so far written at each interval, then once more at the end. A file is
//! followed until its run ends cleanly or it stops growing for a while, or until `stopped`.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use results::{Metrics, Reader};

use crate::{write_report, ReportType};

/// A named input to follow.
pub(crate) type Followed = (String, Box<dyn Read + Send>);

/// Follows `inputs` on threads of their own, writing the report to `out` every `every` (after
/// `clear`, to redraw a terminal) and once at the end; `stopped` ends it early (the last report
/// covers what was read). Returns the damage warnings the readers met; a file that cannot be
/// read is an error naming it.
pub fn every(
    inputs: Vec<Followed>,
    kind: &ReportType,
    every: Duration,
    out: &mut dyn Write,
    clear: bool,
    stopped: &dyn Fn() -> bool,
) -> Result<Vec<String>, results::Error> {
    let metrics = Arc::new(Mutex::new(Metrics::new()));
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let mut readers = Vec::new();
    for (name, input) in inputs {
        let (m, w) = (Arc::clone(&metrics), Arc::clone(&warnings));
        readers.push(std::thread::spawn(move || -> Result<(), results::Error> {
            let follow = results::Follow::new(input);
            let ended = follow.end_flag();
            let mut reader = Reader::new(follow, name);
            let fed = results::feed(&mut reader, &mut (m, ended));
            w.lock().unwrap().extend(reader.warnings().iter().cloned());
            fed
        }));
    }
    let write = |out: &mut dyn Write| -> std::io::Result<()> {
        if clear {
            out.write_all(b"\x1b[H\x1b[2J")?;
        }
        let snapshot = metrics.lock().unwrap().clone();
        write_report(kind, &snapshot, out)?;
        out.flush()
    };
    let io = |e: std::io::Error| results::Error::writing("the output", &e);
    let mut next = Instant::now() + every;
    while readers.iter().any(|r| !r.is_finished()) && !stopped() {
        std::thread::sleep(Duration::from_millis(50).min(next.saturating_duration_since(Instant::now())));
        if Instant::now() >= next {
            write(out).map_err(io)?;
            next += every;
        }
    }
    // Stopped early, the readers still following are left to the process's exit.
    for r in readers.into_iter().filter(|r| r.is_finished() || !stopped()) {
        let panicked = || results::Error::new("report", results::ErrorKind::Io("a reader thread panicked".into()));
        r.join().unwrap_or_else(|_| Err(panicked()))?;
    }
    write(out).map_err(io)?;
    let w = warnings.lock().unwrap().clone();
    Ok(w)
}
