//! `--live`: the live view of an attack or a lab, served beside it.

use std::sync::Arc;

use live::Live;
use tokio_util::sync::CancellationToken;

use crate::args::live::LiveArgs;

/// A live view being served.
pub struct Serving {
    pub live: Arc<Live>,
    stop: CancellationToken,
    linger: std::time::Duration,
}

/// Binds and starts serving when `--live` was given, saying where on stderr.
pub async fn start(args: &LiveArgs, title: &str) -> anyhow::Result<Option<Serving>> {
    let Some(addr) = &args.live else { return Ok(None) };
    let listener = live::bind(addr, args.live_public).await.map_err(anyhow::Error::from)?;
    eprintln!("loadlab: live view on http://{}/", listener.local_addr()?);
    let live = Live::new(title);
    let stop = CancellationToken::new();
    tokio::spawn(live::serve(listener, Arc::clone(&live), stop.clone().cancelled_owned()));
    Ok(Some(Serving { live, stop, linger: args.live_linger }))
}

/// The live view as a lab's watcher: its steps and verdicts, and every record as it arrives.
pub struct LabView(pub Arc<Live>);

impl lab::Watcher for LabView {
    fn event(&self, event: &lab::Event<'_>) {
        use lab::Event;
        match *event {
            Event::Planned { ids } => self.0.set_steps(ids.iter().cloned()),
            Event::Finished { id, line, .. } | Event::Probe { id, line, .. } => self.0.step_done(id, line),
            Event::Started { .. }
            | Event::Skipped { .. }
            | Event::Profile { .. }
            | Event::Spans { .. }
            | Event::Receiving { .. } => {}
        }
    }

    fn records(&self, _id: &str, gauges: &Arc<attack::Gauges>) -> Option<Box<dyn results::Consumer + Send>> {
        Some(Box::new(self.0.consumer(Some(Arc::clone(gauges)))))
    }
}

impl Serving {
    /// After the run: serves on for `--live-linger` (or until `stop`, the first signal, or, when
    /// it offers gathered results, until each was fetched whole), then stops.
    pub async fn finish(self, stop: &CancellationToken) {
        if !self.linger.is_zero() {
            let collected = async {
                self.live.shelf.collected().await;
                // The last bytes are on their way: let them leave before the server stops.
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            };
            tokio::select! {
                _ = tokio::time::sleep(self.linger) => {}
                _ = stop.cancelled() => {}
                _ = collected => {}
            }
        }
        self.stop.cancel();
    }
}
