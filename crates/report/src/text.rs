//! vegeta's text report, line for line, then what vegeta hides: schedule lag, time to first
//! byte and connections.

use std::io::{self, Write};
use std::time::Duration;

use results::{Limit, Metrics};

use crate::tabwriter::align;
use results::duration::vegeta;

fn us(v: u64) -> String {
    vegeta(v * 1000)
}

pub(crate) fn quantile_us(h: &hdrhistogram::Histogram<u64>, q: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(q)
    }
}

pub fn write_text(m: &Metrics, out: &mut dyn Write) -> io::Result<()> {
    // Exact extremes; percentiles from the histogram.
    let (min, max) = if m.requests == 0 { (0, 0) } else { (m.latency_min_us, m.latency_max_us) };
    let q = |p| us(m.latency_quantile_us(p));
    let mean_ns = (m.mean_latency_us() * 1000.0).round() as u64;
    let mean = |total: u64| if m.requests == 0 { 0.0 } else { total as f64 / m.requests as f64 };
    let mut s = String::new();
    s += &format!("Requests\t[total, rate, throughput]\t{}, {:.2}, {:.2}\n", m.requests, m.rate(), m.throughput());
    s += &format!(
        "Duration\t[total, attack, wait]\t{}, {}, {}\n",
        vegeta(m.attack_ns() + m.wait_ns()),
        vegeta(m.attack_ns()),
        vegeta(m.wait_ns())
    );
    s += &format!(
        "Latencies\t[min, mean, 50, 90, 95, 99, max]\t{}, {}, {}, {}, {}, {}, {}\n",
        us(min),
        vegeta(mean_ns),
        q(0.5),
        q(0.9),
        q(0.95),
        q(0.99),
        us(max)
    );
    s += &format!("Bytes In\t[total, mean]\t{}, {:.2}\n", m.bytes_in, mean(m.bytes_in));
    if let Some(d) = m.decoded_in() {
        s += &format!("Bytes In decoded\t[total, mean]\t{}, {:.2}\n", d, mean(d));
    }
    s += &format!("Bytes Out\t[total, mean]\t{}, {:.2}\n", m.bytes_out, mean(m.bytes_out));
    s += &format!("Success\t[ratio]\t{:.2}%\n", m.success_ratio() * 100.0);
    s += "Status Codes\t[code:count]\t";
    for (code, count) in &m.status {
        s += &format!("{code}:{count}  ");
    }
    s += "\nError Set:\n";
    for e in m.errors.keys() {
        s += e;
        s += "\n";
    }
    // loadlab's additions.
    if let Some(r) = &m.replay {
        s += &format!("Replay\t[source, speed]\t{r}\n");
    }
    let ttfb = &m.ttfb;
    let lag = &m.lag;
    // Only what the runs measured: vegeta records no lag, TTFB or connections, and a closed
    // model has no schedule to lag behind.
    if m.all_imported() {
        s += "Schedule Lag\t[50, 99, max, late sends]\tunknown (not recorded by vegeta)\n";
        s += "TTFB\t[50, 90, 95, 99, max]\tunknown (not recorded by vegeta)\n";
        s += "Connections\t[opened]\tunknown (not recorded by vegeta)\n";
        return out.write_all(align(&s).as_bytes());
    }
    if !m.all_closed() {
        s += &format!(
            "Schedule Lag\t[50, 99, max, late sends]\t{}, {}, {}, {} (>{:?}{})\n",
            us(quantile_us(lag, 0.5)),
            us(quantile_us(lag, 0.99)),
            us(if lag.is_empty() { 0 } else { lag.max() }),
            m.late_sends,
            Duration::from_micros(m.late_threshold_us()),
            match (m.pace_tick_us, m.pace_window_us) {
                (0, 0) => String::new(),
                (0, w) => format!(", sends coalesced within {:?} while busy", Duration::from_micros(w)),
                (t, _) => format!(", sends paced by {:?} ticks", Duration::from_micros(t)),
            }
        );
    }
    s += &format!(
        "TTFB\t[50, 90, 95, 99, max]\t{}, {}, {}, {}, {}\n",
        us(quantile_us(ttfb, 0.5)),
        us(quantile_us(ttfb, 0.9)),
        us(quantile_us(ttfb, 0.95)),
        us(quantile_us(ttfb, 0.99)),
        us(if ttfb.is_empty() { 0 } else { ttfb.max() })
    );
    s += &format!("Connections\t[opened]\t{}\n", m.connections);
    // What only some runs have to say: said only then.
    if m.not_sent > 0 {
        let share = m.not_sent as f64 / (m.requests + m.not_sent) as f64 * 100.0;
        s += &format!(
            "Not Sent\t[count, share]\t{}, {share:.2}% of the scheduled requests (too late to send)\n",
            m.not_sent
        );
    }
    match m.limit() {
        Limit::Generator { sent, asked } => {
            let stalled = match results::longest_stall(&m.stalls) {
                Some(st) if st.length_us >= 100_000 => {
                    format!("stalled {} ({} sends held with workers free); ", st.text(), m.stalled_sends)
                }
                _ => String::new(),
            };
            s += &format!(
                "Generator\t[limited]\t{stalled}sent {sent:.1}/s of {asked:.1}/s asked: the generator, not the target, was the limit\n"
            );
        }
        Limit::Target { cap: Some(cap) } => {
            s += &format!(
                "In Flight\t[peak, cap]\t{}, {cap}: sends waited for a free connection (a slow target, or raise --max-workers)\n",
                m.peak_in_flight
            );
        }
        Limit::Target { cap: None } => {
            s += &format!(
                "In Flight\t[peak, cap]\t{}, {}: sends waited for a free connection (a thread's share of the cap was in use: a slow target)\n",
                m.peak_in_flight,
                m.in_flight_cap.map_or("-".to_owned(), |c| c.to_string())
            );
        }
        Limit::Kept => {}
    }
    if let Some(w) = m.accept_waits() {
        s += &format!("Connect\t[waited]\t{w}\n");
    }
    if let Some(st) = m.hidden_stall() {
        let c = &st.corrected;
        s += &format!("Stall\t[closed model]\t{}\n", st.text());
        s += &format!(
            "Corrected\t[50, 90, 95, 99, max]\t{}, {}, {}, {}, {} (for the requests a stall kept from being sent)\n",
            us(quantile_us(c, 0.5)),
            us(quantile_us(c, 0.9)),
            us(quantile_us(c, 0.95)),
            us(quantile_us(c, 0.99)),
            us(if c.is_empty() { 0 } else { c.max() })
        );
    }
    if m.interrupted {
        s += "Stopped\t[early]\tinterrupted before the end of its schedule or count\n";
    }
    if m.incomplete > 0 {
        s += &format!("Incomplete\t[runs]\t{} without their end marker (killed, or a truncated copy)\n", m.incomplete);
    }
    out.write_all(align(&s).as_bytes())
}
