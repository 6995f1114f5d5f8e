//! W3C trace context (`traceparent`, version 00) for a run's requests, so that each request can
//! be joined to the spans its target records. A request's trace id and span id are a function of
//! the run's key and the request's sequence number, and the sequence number comes back from the
//! trace id: nothing per request is stored (the header keeps the key), every id is unique within
//! the run (shards share the key and number their requests globally), and the same `--seed`
//! gives the same ids.
//!
//! A trace id is the key's first half, then the sequence number mixed by a bijection of 64-bit
//! words (two odd multiplications around an xor-shift): the low half looks random, as samplers
//! that read it (`TraceIdRatioBased`) expect, and is undone exactly.

use std::fmt::Write;

/// `traceparent: 00-{32 hex}-{16 hex}-01`: the header's length on the wire, name included.
pub const TRACEPARENT_LINE: usize = "traceparent: ".len() + TRACEPARENT_LEN + 2;

/// The header value's length.
pub const TRACEPARENT_LEN: usize = 55;

const K1: u64 = 0x9E37_79B9_7F4A_7C15;
const K2: u64 = 0xBF58_476D_1CE4_E5B9;

/// The inverse of odd `k` modulo 2^64 (Newton's iteration doubles the good bits each round).
const fn inverse(k: u64) -> u64 {
    let mut x = k;
    let mut i = 0;
    while i < 6 {
        x = x.wrapping_mul(2u64.wrapping_sub(k.wrapping_mul(x)));
        i += 1;
    }
    x
}

const K1_INV: u64 = inverse(K1);
const K2_INV: u64 = inverse(K2);

fn mix(x: u64) -> u64 {
    let y = x.wrapping_mul(K1);
    let y = y ^ (y >> 32);
    y.wrapping_mul(K2)
}

fn unmix(y: u64) -> u64 {
    let x = y.wrapping_mul(K2_INV);
    let x = x ^ (x >> 32);
    x.wrapping_mul(K1_INV)
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A run's trace key: the high half of every trace id, and what the low half is mixed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceKey {
    high: u64,
    low: u64,
}

impl TraceKey {
    /// The key `seed` gives (the same seed, the same ids).
    pub fn from_seed(seed: u64) -> TraceKey {
        let high = splitmix64(seed ^ 0x7472_6163_6500_0000);
        // A trace id of all zeros is invalid: the high half is never zero.
        TraceKey { high: if high == 0 { 1 } else { high }, low: splitmix64(high) }
    }

    /// A key no other run shares (from the system's random source through std's hasher keys).
    pub fn random() -> TraceKey {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
        TraceKey::from_seed(h.finish())
    }

    /// The high half every trace id of the run shares: which run a span belongs to.
    pub fn high(&self) -> u64 {
        self.high
    }

    /// Request `seq`'s trace id.
    pub fn trace_id(&self, seq: u64) -> u128 {
        (u128::from(self.high) << 64) | u128::from(mix(seq ^ self.low))
    }

    /// Request `seq`'s span id: the client's span, the server span's parent (never zero).
    pub fn span_id(&self, seq: u64) -> u64 {
        let s = mix(seq.wrapping_add(self.high)) ^ self.low.rotate_left(29);
        if s == 0 {
            1
        } else {
            s
        }
    }

    /// The sequence number of the request that carried `trace_id`, when it is one of this run's.
    pub fn seq_of(&self, trace_id: u128) -> Option<u64> {
        ((trace_id >> 64) as u64 == self.high).then(|| unmix(trace_id as u64) ^ self.low)
    }

    /// Request `seq`'s `traceparent` value: `00-{trace id}-{span id}-01` (sampled).
    pub fn traceparent(&self, seq: u64) -> [u8; TRACEPARENT_LEN] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = *b"00-00000000000000000000000000000000-0000000000000000-01";
        let (id, span) = (self.trace_id(seq), self.span_id(seq));
        for i in 0..32 {
            out[3 + i] = HEX[((id >> (124 - 4 * i)) & 0xf) as usize];
        }
        for i in 0..16 {
            out[36 + i] = HEX[((span >> (60 - 4 * i)) & 0xf) as usize];
        }
        out
    }

    /// The key as the run's header keeps it (32 hex digits).
    pub fn text(&self) -> String {
        let mut s = String::with_capacity(32);
        let _ = write!(s, "{:016x}{:016x}", self.high, self.low);
        s
    }

    /// A key as [`TraceKey::text`] wrote it.
    pub fn parse(s: &str) -> Option<TraceKey> {
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let high = u64::from_str_radix(&s[..16], 16).ok()?;
        let low = u64::from_str_radix(&s[16..], 16).ok()?;
        (high != 0).then_some(TraceKey { high, low })
    }
}

/// A trace id as 32 lowercase hex digits, as W3C and OTLP's JSON write it.
pub fn trace_id_text(id: u128) -> String {
    format!("{id:032x}")
}

/// A trace id from 32 hex digits (either case), or from its 16 bytes.
pub fn parse_trace_id(s: &str) -> Option<u128> {
    (s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit())).then(|| u128::from_str_radix(s, 16).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_mix_is_undone_exactly() {
        assert_eq!(K1.wrapping_mul(K1_INV), 1);
        assert_eq!(K2.wrapping_mul(K2_INV), 1);
        for x in [0, 1, 2, 41, u64::MAX, 1 << 63, 0xdead_beef_cafe_f00d] {
            assert_eq!(unmix(mix(x)), x);
        }
    }

    #[test]
    fn each_request_has_its_own_ids_and_its_trace_id_gives_its_number_back() {
        let key = TraceKey::from_seed(7);
        let mut ids = HashSet::new();
        let mut spans = HashSet::new();
        for seq in (0..100_000).chain([u64::MAX - 1, u64::MAX]) {
            let id = key.trace_id(seq);
            assert!(ids.insert(id) && spans.insert(key.span_id(seq)));
            assert_eq!(key.seq_of(id), Some(seq));
            assert_ne!(key.span_id(seq), 0);
        }
        // Another run's key does not claim them.
        let other = TraceKey::from_seed(8);
        assert_eq!(other.seq_of(key.trace_id(5)), None);
        // The low halves spread over the whole range, as a ratio sampler reads them: of 100,000
        // consecutive requests about half fall below the middle.
        let below = (0..100_000).filter(|&s| (key.trace_id(s) as u64) < u64::MAX / 2).count();
        assert!((48_000..52_000).contains(&below), "{below}");
    }

    #[test]
    fn a_traceparent_is_w3c_version_00_and_sampled() {
        let key = TraceKey::from_seed(1);
        let v = key.traceparent(42);
        let text = std::str::from_utf8(&v).unwrap();
        let parts: Vec<&str> = text.split('-').collect();
        assert_eq!(parts.len(), 4, "{text}");
        assert_eq!((parts[0], parts[3]), ("00", "01"));
        assert_eq!(parts[1], trace_id_text(key.trace_id(42)));
        assert_eq!(parts[2], format!("{:016x}", key.span_id(42)));
        assert!(text.bytes().all(|b| b == b'-' || b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        assert_eq!(parse_trace_id(parts[1]).and_then(|id| key.seq_of(id)), Some(42));
    }

    #[test]
    fn the_same_seed_gives_the_same_key_and_the_text_reads_back() {
        assert_eq!(TraceKey::from_seed(3), TraceKey::from_seed(3));
        assert_ne!(TraceKey::from_seed(3), TraceKey::from_seed(4));
        assert_ne!(TraceKey::random(), TraceKey::random());
        let key = TraceKey::from_seed(9);
        assert_eq!(TraceKey::parse(&key.text()), Some(key));
        for bad in ["", "xyz", &"0".repeat(32), &"g".repeat(32), &"1".repeat(31)] {
            assert_eq!(TraceKey::parse(bad), None, "{bad}");
        }
    }
}
