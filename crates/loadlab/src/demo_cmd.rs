//! `loadlab demo`.

use crate::bad;
use crate::cli::DemoArgs;

pub fn run(a: DemoArgs) -> anyhow::Result<()> {
    let step = attack::duration::parse(&a.step).map_err(|e| bad(format!("--step: {e}")))?;
    if step.is_zero() || a.rates.is_empty() || a.rates.iter().any(|r| !r.is_finite() || *r <= 0.0) {
        return Err(bad("--rates must be positive and --step longer than 0"));
    }
    let opts = lab::demo::DemoOptions { rates: a.rates, step, out: a.out };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut out = std::io::stdout();
        lab::demo::run(&opts, &mut out).await?;
        Ok(())
    })
}
