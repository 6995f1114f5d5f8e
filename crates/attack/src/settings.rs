//! The results header's `settings`: what an attack was asked, in `attack`'s flag names, made
//! from its config, so an attack from the command line and a lab's step write one record (the
//! lab once wrote its own, a load point and a warm-up in seconds, and a test had to clear both
//! to compare them).

use serde_json::{json, Map, Value};

use crate::config::{AttackConfig, Model};
use crate::RateSpec;

impl AttackConfig {
    /// The attack's settings for the results header, each under the flag that sets it; a front
    /// end may add what only it knows (a ramp as given, a lab's warm-up).
    pub fn settings_record(&self) -> Map<String, Value> {
        let text = |d: std::time::Duration| results::duration::go_string(d.as_nanos() as u64);
        let (rate, rate_steps, duration, streams, requests, replay, speed) = match &self.model {
            Model::Open { schedule } => (
                schedule.constant_rate().map(|r| RateSpec::Constant(r).to_string()),
                schedule.rate_steps_asked().map(|(step, rates)| RateSpec::Steps(rates.to_vec(), step).to_string()),
                Some(text(schedule.duration())),
                None,
                None,
                None,
                None,
            ),
            Model::Closed { streams, requests, duration } => {
                (None, None, duration.map(text), Some(*streams), *requests, None, None)
            }
            Model::Replay(spec) => {
                (None, None, spec.limit.map(text), None, None, Some(spec.path.display().to_string()), Some(spec.speed))
            }
        };
        let c = &self.client;
        let record = json!({
            "rate": rate, "rate_steps": rate_steps, "duration": duration, "replay": replay, "speed": speed,
            "connections": self.connections, "streams": streams, "requests": requests,
            "max_workers": self.max_workers, "requests_per_conn": self.requests_per_conn,
            "protocol": c.protocol.to_string(), "timeout": text(c.timeout), "max_body": c.max_body,
            "keepalive": c.keepalive, "compressed": c.compressed,
        });
        match record {
            Value::Object(map) => map.into_iter().filter(|(_, v)| !v.is_null()).collect(),
            _ => Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::Schedule;

    #[test]
    fn each_model_records_its_own_flags_and_nothing_unset() {
        let open =
            AttackConfig::new(vec![], Model::Open { schedule: Schedule::constant(50.0, Duration::from_secs(3)) });
        let s = open.settings_record();
        assert_eq!((s["rate"].as_str(), s["duration"].as_str()), (Some("50"), Some("3s")), "{s:?}");
        assert!(!s.contains_key("connections") && !s.contains_key("streams"), "{s:?}");
        let closed = AttackConfig::new(vec![], Model::Closed { streams: 4, requests: Some(100), duration: None })
            .with_connections(2);
        let s = closed.settings_record();
        assert_eq!(
            (s["connections"].as_u64(), s["streams"].as_u64(), s["requests"].as_u64()),
            (Some(2), Some(4), Some(100))
        );
        assert!(!s.contains_key("rate") && !s.contains_key("duration"), "{s:?}");
        assert_eq!(s["protocol"], "http1");
    }
}
