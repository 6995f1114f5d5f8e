use serde::{Deserialize, Serialize};

/// Version of the `.llr` format written by this build.
pub const FORMAT_VERSION: u8 = 1;

/// One request's outcome. Times are microseconds; every duration is measured from the request's
/// *scheduled* send time, so a stalled server (or generator) shows in the latencies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Request number within the run, in schedule order (0-based).
    pub seq: u64,
    /// Index into the run's target table.
    pub target: u32,
    /// Scheduled send time, as an offset from the run's start.
    pub scheduled_us: u64,
    /// Scheduled send time to the last byte of the response (or to the failure).
    pub latency_us: u64,
    /// Scheduled send time to the response head; equal to `latency_us` when nothing arrived.
    pub ttfb_us: u64,
    /// Queueing delay: scheduled send time to the actual send.
    pub lag_us: u64,
    /// HTTP status; 0 when no response arrived.
    pub status: u16,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// 0 when the request succeeded, else a 1-based index into the run's error table.
    pub error: u32,
    /// Whether this request opened a new connection (TCP, TLS included).
    pub new_conn: bool,
}

impl Record {
    /// Success, the one rule every count uses (reports, labs, charts, the live view): a 2xx or
    /// 3xx answer without an error. As vegeta counts it, since vegeta's failed requests carry no
    /// status; a file from elsewhere with both a 2xx status and an error counts as a failure.
    pub fn is_success(&self) -> bool {
        self.error == 0 && (200..400).contains(&self.status)
    }
}

/// What a run's file starts with: who, when, how, and against what.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    pub version: u8,
    /// The attack's `--name`.
    #[serde(default)]
    pub name: String,
    /// Wall-clock time of the schedule's start, in nanoseconds since the Unix epoch (UTC).
    pub start_unix_ns: u64,
    /// The attack's settings as given (rate, duration, protocol ...), for the record.
    #[serde(default)]
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// Targets as `METHOD URL`; a record's `target` indexes this table.
    #[serde(default)]
    pub targets: Vec<String>,
    /// What the run was asked to do, typed (read it with [`RunHeader::plan`], which also reads
    /// files from before it existed).
    #[serde(default, rename = "plan", skip_serializing_if = "Option::is_none")]
    pub run_plan: Option<crate::RunPlan>,
}

impl RunHeader {
    /// The open model's pacing tick (`--pace-tick`), in microseconds; 0 when each hit was sent
    /// at its own time.
    pub fn pace_tick_us(&self) -> u64 {
        self.plan().pace_tick_us
    }

    /// How late a send of this run may leave and still count as on time: the late threshold
    /// past its pacing tick or coalescing window (a send waits for either by design).
    pub fn late_send_us(&self) -> u64 {
        let plan = self.plan();
        crate::LATE_SEND_US + plan.pace_tick_us + plan.pace_window_us
    }

    /// The warm-up a lab's step sent first and did not count (its `warmup` setting), in
    /// microseconds of the schedule; 0 for a run without one.
    pub fn warmup_us(&self) -> u64 {
        self.settings
            .get("warmup")
            .and_then(serde_json::Value::as_str)
            .and_then(|w| crate::duration::parse(w).ok())
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }
}

/// What a run's end says, written with its end marker.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    /// Scheduled requests the generator could not send by the schedule's end (open model): never
    /// sent late, counted here.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_sent: u64,
    /// The open model's asked rate, requests per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_rate: Option<f64>,
    /// Most requests in flight at once, and the cap on them (`--max-workers`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub peak_in_flight: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight_cap: Option<u64>,
    /// Open model: sends that found no free connection while none could be added, because the
    /// thread's share of the cap was in use (the target's doing) ...
    #[serde(default, skip_serializing_if = "is_zero")]
    pub waits_for_target: u64,
    /// ... or because the generator's own thread was saturated.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub waits_for_generator: u64,
    /// Connections that took 900 ms or more to open (a SYN retransmitted), the longest open
    /// (µs), and the listen-queue overflows the kernel counted over the run (a loopback target).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub slow_connects: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connect_max_us: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen_overflows: Option<u64>,
    /// The generator's own stalls: sends that left late while a worker was free to take them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<crate::Stall>,
    /// Response bodies' total decoded size, where the attack decoded them (`--compressed`);
    /// records count the bytes received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoded_bytes_in: Option<u64>,
    /// Stopped (SIGINT, SIGTERM) before its schedule or count ran out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// What the attack's own threads got of the CPU (Linux), and how idle the machine was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_cpu: Option<GeneratorCpu>,
    /// The source had its end marker (false for a killed attack or a truncated file).
    #[serde(skip)]
    pub complete: bool,
}

/// CPU time of the attack's event-loop threads while it ran: on a CPU, and waiting on a run
/// queue for one, summed over its threads; and the machine's idle share over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorCpu {
    pub threads: u64,
    /// Wall time summed over the threads.
    pub wall_us: u64,
    pub run_us: u64,
    pub wait_us: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_idle: Option<f64>,
}

impl GeneratorCpu {
    /// The threads' time spent waiting for a CPU, as a share of their wall time (0..1).
    pub fn wait_share(&self) -> f64 {
        if self.wall_us == 0 {
            0.0
        } else {
            self.wait_us as f64 / self.wall_us as f64
        }
    }

    /// The threads' time on a CPU, as a share of their wall time.
    pub fn run_share(&self) -> f64 {
        if self.wall_us == 0 {
            0.0
        } else {
            self.run_us as f64 / self.wall_us as f64
        }
    }

    /// Adds another thread's or run's times (the machine's idle share: the lower).
    pub fn add(&mut self, o: &GeneratorCpu) {
        self.threads += o.threads;
        self.wall_us += o.wall_us;
        self.run_us += o.run_us;
        self.wait_us += o.wait_us;
        self.machine_idle = match (self.machine_idle, o.machine_idle) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl RunEnd {
    /// The end of a source that stopped without its end marker.
    pub fn incomplete() -> RunEnd {
        RunEnd::default()
    }

    /// A clean end that says nothing more.
    pub fn complete() -> RunEnd {
        RunEnd { complete: true, ..RunEnd::default() }
    }

    /// Whether there is anything to write besides the marker.
    pub fn is_plain(&self) -> bool {
        RunEnd { complete: false, ..self.clone() } == RunEnd::default()
    }
}

#[cfg(test)]
mod tests {
    use super::Record;

    #[test]
    fn success_is_a_2xx_or_3xx_answer_without_an_error() {
        let r = |status, error| Record { status, error, ..Record::default() };
        assert!(r(200, 0).is_success() && r(304, 0).is_success());
        assert!(!r(404, 0).is_success() && !r(0, 1).is_success() && !r(199, 0).is_success());
        // A body cut short after its 200 header (as another tool may write it): a failure.
        assert!(!r(200, 1).is_success());
    }
}
