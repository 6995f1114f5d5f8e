//! `loadlab demo`.

pub mod args;

use crate::bad;
use crate::shutdown::{Second, Shutdown};
use args::DemoArgs;

pub fn run(a: DemoArgs) -> anyhow::Result<()> {
    if a.rates.is_empty() {
        return Err(bad("--rates: give at least one rate"));
    }
    for r in &a.rates {
        attack::check_rate(*r).map_err(|e| bad(format!("--rates: {e}")))?;
    }
    if let Some(twice) = a.rates.iter().enumerate().find(|(i, r)| a.rates[..*i].contains(r)).map(|(_, r)| r) {
        return Err(bad(format!("--rates: {twice} given twice")));
    }
    let shutdown = Shutdown::watch("stopping after the current step's requests in flight", Second::Abandon)?;
    let opts =
        lab::DemoOptions { rates: a.rates, step: a.step, out: a.out, stop: shutdown.stop(), abort: shutdown.now() };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(async {
        let mut out = std::io::stdout();
        lab::run_demo(&opts, &mut out).await?;
        Ok(())
    });
    shutdown.outcome(result)
}
