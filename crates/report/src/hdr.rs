//! HdrHistogram's percentile distribution text (values in milliseconds), the format HDR
//! plotters read (hdrhistogram.github.io/HdrHistogram/plotFiles.html).

use std::io::{self, Write};

use results::Metrics;

pub fn write_hdr(m: &Metrics, out: &mut dyn Write) -> io::Result<()> {
    let h = &m.latency;
    let scale = 1000.0; // microseconds to milliseconds
    writeln!(out, "{:>12} {:>14} {:>10} {:>14}\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)")?;
    let mut total = 0u64;
    if !h.is_empty() {
        for v in h.iter_quantiles(5) {
            total += v.count_since_last_iteration();
            let value = h.highest_equivalent(v.value_iterated_to()) as f64 / scale;
            let p = v.quantile_iterated_to();
            if p < 1.0 {
                writeln!(out, "{value:12.3} {p:2.12} {total:10} {:14.2}", 1.0 / (1.0 - p))?;
            } else {
                writeln!(out, "{value:12.3} {p:2.12} {total:10}")?;
            }
        }
    }
    let (mean, stdev, max) =
        if h.is_empty() { (0.0, 0.0, 0.0) } else { (h.mean() / scale, h.stdev() / scale, h.max() as f64 / scale) };
    writeln!(out, "#[Mean    = {mean:12.3}, StdDeviation   = {stdev:12.3}]")?;
    writeln!(out, "#[Max     = {max:12.3}, Total count    = {:12}]", h.len())?;
    let sub_buckets = (2.0 * 10f64.powi(i32::from(h.sigfig()))).log2().ceil().exp2() as u64;
    writeln!(out, "#[Buckets = {:12}, SubBuckets     = {:12}]", h.buckets(), sub_buckets)
}
