//! Payloads, made once when a recipe is loaded: random characters, bodies with `<<SIZE>>` tags,
//! bodies fetched from an origin, gzipped once when the recipe's headers say so.

use std::io::Write;

use bytes::Bytes;
use rand::{Rng, RngCore};

use crate::recipe::{Handler, Recipe, RecipeError, Source};

/// Bodies made for a random-size range when gzip forbids slicing one buffer per request.
const GZIP_VARIANTS: usize = 32;
const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// What a route answers with status 200.
#[derive(Clone, Debug)]
pub enum Payload {
    /// The same bytes every time (already gzipped when the recipe says so).
    Fixed(Bytes),
    /// A size drawn per request from `min..=max`, served as a prefix of one random buffer.
    Slices {
        master: Bytes,
        min: usize,
        max: usize,
    },
    /// Pre-made gzipped bodies of sizes drawn from the range; one picked per request.
    Variants(Vec<Bytes>),
    Handler(Handler),
}

impl Payload {
    /// The body of one response.
    pub fn pick(&self) -> Bytes {
        match self {
            Payload::Fixed(b) => b.clone(),
            Payload::Slices { master, min, max } => master.slice(..rand::random_range(*min..=*max)),
            Payload::Variants(v) => v[rand::random_range(0..v.len())].clone(),
            Payload::Handler(_) => Bytes::new(),
        }
    }
}

/// `n` random characters of the base64 alphabet.
pub(crate) fn random_chars(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    rand::rng().fill_bytes(&mut buf);
    for b in &mut buf {
        *b = ALPHABET[(*b & 63) as usize];
    }
    buf
}

pub(crate) fn gzip(data: &[u8]) -> Bytes {
    let mut enc =
        flate2::write::GzEncoder::new(Vec::with_capacity(data.len() / 2 + 64), flate2::Compression::default());
    enc.write_all(data).expect("writing to memory");
    Bytes::from(enc.finish().expect("writing to memory"))
}

#[cfg(test)]
fn gunzip(data: &[u8]) -> Result<Vec<u8>, std::io::Error> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(data), &mut out)?;
    Ok(out)
}

/// A byte count as recipes write sizes (`512kb`, `1.5mb`).
pub(crate) fn size_text(n: u64) -> String {
    let (unit, div) = match n {
        n if n >= 1 << 20 => ("mb", (1u64 << 20) as f64),
        n if n >= 1 << 10 => ("kb", 1024.0),
        _ => ("b", 1.0),
    };
    let v = format!("{:.1}", n as f64 / div);
    format!("{}{unit}", v.strip_suffix(".0").unwrap_or(&v))
}

/// A built payload, whether its uncompressed form starts with `{` (for the content type), and
/// the bytes it holds.
pub(crate) struct Built {
    pub payload: Payload,
    pub json: bool,
    pub bytes: u64,
}

/// The recipe field that makes the payload, and the bytes making it takes as far as the recipe
/// says, before anything is made. An origin's body is only known as it arrives: 0 here, held to
/// the budget while it is fetched.
pub(crate) fn planned_bytes(recipe: &Recipe) -> (&'static str, u64) {
    match &recipe.source {
        Source::Body(body) => {
            let tags = crate::recipe::size_tags(body).map(|t| crate::recipe::parse_size(t).unwrap_or(0));
            ("body", tags.fold(body.len() as u64, u64::saturating_add))
        }
        Source::Random { min, max } if min == max || !recipe.gzip() => ("random_content", *max),
        // One buffer per variant, each gzipped.
        Source::Random { max, .. } => ("random_content", max.saturating_mul(GZIP_VARIANTS as u64)),
        Source::Origin(_) => ("origin", 0),
        Source::Handler(_) => ("handler", 0),
    }
}

impl Payload {
    /// Bytes held.
    fn bytes(&self) -> u64 {
        match self {
            Payload::Fixed(b) => b.len() as u64,
            Payload::Slices { master, .. } => master.len() as u64,
            Payload::Variants(v) => v.iter().map(|b| b.len() as u64).sum(),
            Payload::Handler(_) => 0,
        }
    }
}

/// Makes the payload of `recipe`, reading at most `budget` bytes from an origin; `path` names the
/// recipe in errors. Making and gzipping run off the event loop: a 100 MB payload stalls no
/// request.
pub(crate) async fn build(recipe: &Recipe, path: &str, budget: u64) -> Result<Built, RecipeError> {
    // Compressed per request: the payload is kept plain and gzipped as each response leaves.
    let gz = recipe.gzip() && !recipe.compress_per_request;
    let plain = match &recipe.source {
        Source::Handler(h) => {
            return Ok(Built { payload: Payload::Handler(*h), json: *h == Handler::Fibonacci, bytes: 0 })
        }
        Source::Origin(url) => Some(fetch_origin(recipe, url, path, budget).await?),
        _ => None,
    };
    let source = recipe.source.clone();
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || make(source, plain, gz, &path))
        .await
        .map_err(|e| RecipeError(format!("making the payload: {e}")))?
}

fn make(source: Source, fetched: Option<Vec<u8>>, gz: bool, path: &str) -> Result<Built, RecipeError> {
    let fixed = |plain: Vec<u8>| {
        let json = plain.first() == Some(&b'{');
        let bytes = if gz { gzip(&plain) } else { Bytes::from(plain) };
        Built { bytes: bytes.len() as u64, payload: Payload::Fixed(bytes), json }
    };
    let built = match source {
        Source::Body(body) => {
            let mut out = String::with_capacity(body.len());
            let mut rest = body.as_str();
            while let Some(start) = rest.find("<<") {
                match rest[start + 2..].find(">>") {
                    Some(end) => {
                        let tag = &rest[start + 2..start + 2 + end];
                        let size =
                            crate::recipe::parse_size(tag).map_err(|e| RecipeError(format!("{path}.body: {e}")))?;
                        out.push_str(&rest[..start]);
                        out.push_str(std::str::from_utf8(&random_chars(size as usize)).expect("ASCII"));
                        rest = &rest[start + 2 + end + 2..];
                    }
                    None => break,
                }
            }
            out.push_str(rest);
            fixed(out.into_bytes())
        }
        Source::Random { min, max } if min == max => fixed(random_chars(max as usize)),
        Source::Random { min, max } => {
            let (min, max) = (min as usize, max as usize);
            let payload = if gz {
                Payload::Variants(
                    (0..GZIP_VARIANTS).map(|_| gzip(&random_chars(rand::rng().random_range(min..=max)))).collect(),
                )
            } else {
                Payload::Slices { master: Bytes::from(random_chars(max)), min, max }
            };
            Built { bytes: payload.bytes(), payload, json: false }
        }
        Source::Origin(_) => fixed(fetched.unwrap_or_default()),
        Source::Handler(h) => Built { payload: Payload::Handler(h), json: h == Handler::Fibonacci, bytes: 0 },
    };
    Ok(built)
}

/// The origin's body, uncompressed, at most `budget` bytes.
async fn fetch_origin(recipe: &Recipe, url: &str, path: &str, budget: u64) -> Result<Vec<u8>, RecipeError> {
    let mut headers = recipe.headers.clone();
    headers.retain(|(k, _)| k != "content-encoding" && k != "content-type" && k != "content-length");
    if recipe.gzip() {
        headers.push(("accept-encoding".into(), "gzip".into()));
    }
    let opts = client::ClientOptions { max_body: Some(budget), ..Default::default() };
    let over = || {
        RecipeError(format!(
            "{path}.origin: the body from {url} is over the {} of payload left under the limit (origin --max-payload raises it)",
            size_text(budget)
        ))
    };
    let fetched = client::fetch(url, &headers, opts).await.map_err(|e| {
        if e.starts_with("body over") {
            over()
        } else {
            RecipeError(format!("{path}.origin: fetching {url}: {e}"))
        }
    })?;
    if !(200..300).contains(&fetched.status) {
        return Err(RecipeError(format!("{path}.origin: fetching {url}: status {}", fetched.status)));
    }
    let came_gzipped =
        fetched.headers.get(http::header::CONTENT_ENCODING).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
    if !came_gzipped {
        return Ok(fetched.body.to_vec());
    }
    // Decoded within the budget too: a small gzip can unpack to gigabytes.
    let mut out = Vec::new();
    let mut decoder = std::io::Read::take(flate2::read::GzDecoder::new(&fetched.body[..]), budget.saturating_add(1));
    std::io::Read::read_to_end(&mut decoder, &mut out)
        .map_err(|e| RecipeError(format!("{path}.origin: bad gzip from {url}: {e}")))?;
    if out.len() as u64 > budget {
        return Err(over());
    }
    Ok(out)
}

/// fib(n), exactly, in decimal.
pub(crate) fn fibonacci(n: u32) -> String {
    let (mut a, mut b) = (num_bigint::BigUint::from(0u8), num_bigint::BigUint::from(1u8));
    for _ in 0..n {
        let next = &a + &b;
        a = std::mem::replace(&mut b, next);
    }
    a.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fibonacci_is_exact() {
        assert_eq!(fibonacci(0), "0");
        assert_eq!(fibonacci(10), "55");
        let f500 = fibonacci(500);
        assert_eq!(f500.len(), 105);
        assert!(f500.starts_with(
            "1394232245616978801397243828704072839500702565876973072641089629483255716228632906915576588762225"
        ));
    }

    #[test]
    fn random_chars_use_the_base64_alphabet() {
        let r = random_chars(10_000);
        assert_eq!(r.len(), 10_000);
        assert!(r.iter().all(|b| ALPHABET.contains(b)));
        assert_ne!(random_chars(64), random_chars(64));
    }

    #[test]
    fn gzip_round_trips() {
        let data = random_chars(5000);
        assert_eq!(gunzip(&gzip(&data)).unwrap(), data);
    }
}
