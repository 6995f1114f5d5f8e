//! CPU profiles read over HTTP in pprof's format (profile.proto, gzipped), as Go's
//! `net/http/pprof` serves them and the pprof exporters of Rust and Python services do:
//! `GET URL?seconds=N` answers after N seconds with what the service sampled meanwhile.

use std::collections::HashMap;
use std::io::Read;
use std::time::Duration;

use prost::Message;

use super::folded::Folded;

/// The messages of profile.proto that a CPU profile needs (field numbers as in
/// github.com/google/pprof/proto/profile.proto); other fields are skipped.
#[derive(Clone, PartialEq, Message)]
pub struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    /// Leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Inlined functions first, the function they were inlined into last.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
}

/// A CPU profile's stacks, weighted in nanoseconds of CPU, and the CPU they add up to.
#[derive(Debug)]
pub struct Taken {
    pub folded: Folded,
    pub samples: u64,
    pub cpu_s: f64,
    pub notes: Vec<String>,
}

/// Decodes a profile (gzipped or not) into folded stacks weighted by its CPU time.
pub fn parse(bytes: &[u8]) -> Result<Taken, String> {
    let raw;
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        // A profile is megabytes at most: a bomb is cut at 512 MiB and refused.
        flate2::read::GzDecoder::new(bytes)
            .take(512 << 20)
            .read_to_end(&mut out)
            .map_err(|e| format!("not a pprof profile (bad gzip: {e})"))?;
        raw = out;
        &raw[..]
    } else {
        bytes
    };
    let p = Profile::decode(bytes).map_err(|e| format!("not a pprof profile ({e})"))?;
    let text = |i: i64| p.string_table.get(i as usize).map_or("?", String::as_str);
    if p.sample_type.is_empty() {
        return Err("not a pprof profile (no sample types)".into());
    }
    // The CPU column: `cpu`/`nanoseconds` in Go's; else the last one.
    let column =
        p.sample_type.iter().position(|t| text(t.r#type) == "cpu" && text(t.unit) == "nanoseconds").ok_or_else(
            || {
                let kinds: Vec<String> =
                    p.sample_type.iter().map(|t| format!("{}/{}", text(t.r#type), text(t.unit))).collect();
                format!("not a CPU profile (its samples are {})", kinds.join(", "))
            },
        )?;
    let functions: HashMap<u64, &str> = p.function.iter().map(|f| (f.id, text(f.name))).collect();
    let locations: HashMap<u64, &Location> = p.location.iter().map(|l| (l.id, l)).collect();
    // Go folds equal stacks into one sample with a count (`samples`/`count`).
    let count = p.sample_type.iter().position(|t| text(t.r#type) == "samples");
    let mut folded = Folded::default();
    let mut samples = 0;
    for s in &p.sample {
        let Some(&ns) = s.value.get(column) else { continue };
        if ns <= 0 {
            continue;
        }
        samples += count.and_then(|c| s.value.get(c)).map_or(1, |&n| n.max(1) as u64);
        let mut frames: Vec<String> = Vec::new();
        for id in &s.location_id {
            match locations.get(id) {
                Some(l) if !l.line.is_empty() => {
                    for line in &l.line {
                        frames.push(functions.get(&line.function_id).copied().unwrap_or("[unknown]").to_owned());
                    }
                }
                Some(l) => frames.push(format!("{:#x}", l.address)),
                None => frames.push("[unknown]".into()),
            }
        }
        frames.reverse();
        *folded.stacks.entry(frames.join(";")).or_default() += ns as u64;
    }
    let cpu_s = folded.total() as f64 / 1e9;
    let mut notes = Vec::new();
    let unknown = folded.unsymbolised_share();
    if unknown > 0.2 {
        notes
            .push(format!("symbols missing for {:.0}% of the CPU: those frames are shown by address", unknown * 100.0));
    }
    Ok(Taken { folded, samples, cpu_s, notes })
}

/// `url` with `seconds=N` for a window of `length` (whole seconds, at least 1, as Go takes it).
pub(crate) fn window_url(url: &str, length: Duration) -> String {
    let secs = length.as_secs_f64().round().max(1.0) as u64;
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}seconds={secs}")
}

/// Fetches the profile of the next `length` from `url` and decodes it.
pub async fn take(url: &str, length: Duration) -> Result<Taken, String> {
    let opts = client::ClientOptions {
        timeout: length + Duration::from_secs(15),
        max_body: Some(256 << 20),
        ..Default::default()
    };
    let got = client::fetch(&window_url(url, length), &[], opts).await.map_err(|e| format!("{url}: {e}"))?;
    if !(200..300).contains(&got.status) {
        let reason = http::StatusCode::from_u16(got.status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
        return Err(format!("{url} answered {} {reason}", got.status));
    }
    parse(&got.body).map_err(|e| format!("{url}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> Profile {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        Profile {
            sample_type: vec![ValueType { r#type: 1, unit: 2 }, ValueType { r#type: 3, unit: 4 }],
            // main -> serve -> deflate (deflate's helper inlined into it).
            sample: vec![
                Sample { location_id: vec![3, 2, 1], value: vec![3, 30_000_000] },
                Sample { location_id: vec![2, 1], value: vec![1, 10_000_000] },
                Sample { location_id: vec![4, 1], value: vec![1, 10_000_000] },
            ],
            location: vec![
                Location { id: 1, address: 0x10, line: vec![Line { function_id: 1 }] },
                Location { id: 2, address: 0x20, line: vec![Line { function_id: 2 }] },
                Location { id: 3, address: 0x30, line: vec![Line { function_id: 4 }, Line { function_id: 3 }] },
                Location { id: 4, address: 0x4f2a, line: vec![] },
            ],
            function: vec![
                Function { id: 1, name: 5 },
                Function { id: 2, name: 6 },
                Function { id: 3, name: 7 },
                Function { id: 4, name: 8 },
            ],
            string_table: s(&["", "samples", "count", "cpu", "nanoseconds", "main", "serve", "deflate", "huff"]),
            duration_nanos: 1_000_000_000,
        }
    }

    #[test]
    fn a_cpu_profile_folds_root_first_with_inlined_frames_and_addresses() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &profile().encode_to_vec()).unwrap();
        let t = parse(&gz.finish().unwrap()).unwrap();
        assert_eq!(t.folded.stacks["main;serve;deflate;huff"], 30_000_000);
        assert_eq!(t.folded.stacks["main;serve"], 10_000_000);
        assert_eq!(t.folded.stacks["main;0x4f2a"], 10_000_000);
        assert!((t.cpu_s - 0.05).abs() < 1e-12 && t.samples == 5, "counts summed");
        assert!(t.notes.is_empty(), "{:?}", t.notes);
    }

    #[test]
    fn garbage_and_other_profiles_are_refused_in_a_line() {
        assert!(parse(b"<html>404 page not found</html>").unwrap_err().starts_with("not a pprof profile"));
        assert!(parse(&[0x1f, 0x8b, 1, 2, 3]).unwrap_err().contains("bad gzip"));
        let mut heap = profile();
        heap.string_table[3] = "alloc_space".into();
        heap.string_table[4] = "bytes".into();
        let e = parse(&heap.encode_to_vec()).unwrap_err();
        assert!(e.contains("not a CPU profile (its samples are samples/count, alloc_space/bytes)"), "{e}");
        assert_eq!(
            window_url("http://h/debug/pprof/profile", Duration::from_millis(2400)),
            "http://h/debug/pprof/profile?seconds=2"
        );
    }
}
