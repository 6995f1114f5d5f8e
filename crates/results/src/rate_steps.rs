//! A run split by the rate steps of its schedule (`attack --rate-steps 400,800@60s`): the header
//! says the rate step length and rates, and each record falls in the rate step of its scheduled
//! time. (A lab's "step" is one attack of its plan: another thing.)

use std::io;

use crate::consumer::{Consumer, Entry};
use crate::metrics::Metrics;
use crate::record::{RunEnd, RunHeader};

/// One step's metrics, with its rate and time window (seconds from the run's start).
#[derive(Clone, Debug)]
pub struct RateStep {
    pub rate: Option<f64>,
    pub from_s: f64,
    pub to_s: f64,
    pub metrics: Metrics,
}

/// Splits every run it takes by its steps; a run without steps is one step.
#[derive(Default)]
pub struct ByRateStep {
    pub steps: Vec<RateStep>,
    /// Index of the current run's first step, and its step length in µs.
    current: usize,
    step_us: Option<u64>,
    rates: Vec<f64>,
    /// The current run's header, for steps that start after it.
    pending_header: Option<RunHeader>,
}

impl ByRateStep {
    pub fn new() -> ByRateStep {
        ByRateStep::default()
    }

    fn step_for(&mut self, scheduled_us: u64) -> &mut Metrics {
        let k = self.step_us.map_or(0, |s| (scheduled_us / s.max(1)) as usize);
        while self.steps.len() <= self.current + k {
            let i = self.steps.len() - self.current;
            let (from_s, to_s) = match self.step_us {
                Some(s) => (i as f64 * s as f64 / 1e6, (i + 1) as f64 * s as f64 / 1e6),
                None => (0.0, f64::INFINITY),
            };
            self.steps.push(RateStep { rate: self.rates.get(i).copied(), from_s, to_s, metrics: Metrics::new() });
        }
        &mut self.steps[self.current + k].metrics
    }
}

impl Consumer for ByRateStep {
    fn start(&mut self, header: &RunHeader) -> io::Result<()> {
        self.current = self.steps.len();
        let steps = header.plan().steps.filter(|s| s.step_us > 0);
        self.step_us = steps.as_ref().map(|s| s.step_us);
        self.rates = steps.map(|s| s.rates).unwrap_or_default();
        // Every step of the schedule exists, even one without records.
        if let Some(s) = self.step_us {
            for k in 0..self.rates.len() {
                self.step_for(k as u64 * s);
            }
        }
        let header = header.clone();
        for s in &mut self.steps[self.current..] {
            s.metrics.start(&header)?;
        }
        self.pending_header = Some(header);
        Ok(())
    }

    fn record(&mut self, e: &Entry<'_>) -> io::Result<()> {
        let header = self.pending_header.clone();
        let m = self.step_for(e.record.scheduled_us);
        if m.runs.is_empty() {
            if let Some(h) = &header {
                m.start(h)?;
            }
        }
        m.record(e)
    }

    /// Requests not sent are the schedule's last: they go to the last step; each step is told
    /// its own asked rate.
    fn end(&mut self, end: &RunEnd) -> io::Result<()> {
        let last = self.steps.len().saturating_sub(1);
        for (i, s) in self.steps.iter_mut().enumerate().skip(self.current) {
            let mut e = if i == last {
                end.clone()
            } else {
                RunEnd { complete: end.complete, interrupted: end.interrupted, ..RunEnd::default() }
            };
            e.asked_rate = s.rate.or(e.asked_rate);
            s.metrics.end(&e)?;
        }
        Ok(())
    }
}
