//! `loadlab demo`.

use crate::bad;
use crate::cli::DemoArgs;

pub fn run(a: DemoArgs) -> anyhow::Result<()> {
    if a.rates.is_empty() || a.rates.iter().any(|r| !r.is_finite() || *r <= 0.0 || *r > attack::MAX_RATE) {
        return Err(bad(format!("--rates must be positive and at most {}", attack::MAX_RATE)));
    }
    if let Some(twice) = a.rates.iter().enumerate().find(|(i, r)| a.rates[..*i].contains(r)).map(|(_, r)| r) {
        return Err(bad(format!("--rates: {twice} given twice")));
    }
    let opts = lab::demo::DemoOptions { rates: a.rates, step: a.step, out: a.out };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut out = std::io::stdout();
        lab::demo::run(&opts, &mut out).await?;
        Ok(())
    })
}
