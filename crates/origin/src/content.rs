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
pub fn random_chars(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    rand::rng().fill_bytes(&mut buf);
    for b in &mut buf {
        *b = ALPHABET[(*b & 63) as usize];
    }
    buf
}

pub fn gzip(data: &[u8]) -> Bytes {
    let mut enc =
        flate2::write::GzEncoder::new(Vec::with_capacity(data.len() / 2 + 64), flate2::Compression::default());
    enc.write_all(data).expect("writing to memory");
    Bytes::from(enc.finish().expect("writing to memory"))
}

fn gunzip(data: &[u8]) -> Result<Vec<u8>, std::io::Error> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(data), &mut out)?;
    Ok(out)
}

/// A built payload and whether its uncompressed form starts with `{` (for the content type).
pub struct Built {
    pub payload: Payload,
    pub json: bool,
}

/// Makes the payload of `recipe`; `path` names the recipe in errors.
pub async fn build(recipe: &Recipe, path: &str) -> Result<Built, RecipeError> {
    let gz = recipe.gzip();
    let fixed = |plain: Vec<u8>| {
        let json = plain.first() == Some(&b'{');
        let bytes = if gz { gzip(&plain) } else { Bytes::from(plain) };
        Built { payload: Payload::Fixed(bytes), json }
    };
    Ok(match &recipe.source {
        Source::Handler(h) => Built { payload: Payload::Handler(*h), json: *h == Handler::Fibonacci },
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
        Source::Random { min, max } if min == max => fixed(random_chars(*min as usize)),
        Source::Random { min, max } => {
            let (min, max) = (*min as usize, *max as usize);
            if gz {
                let variants =
                    (0..GZIP_VARIANTS).map(|_| gzip(&random_chars(rand::rng().random_range(min..=max)))).collect();
                Built { payload: Payload::Variants(variants), json: false }
            } else {
                Built { payload: Payload::Slices { master: Bytes::from(random_chars(max)), min, max }, json: false }
            }
        }
        Source::Origin(url) => {
            let mut headers = recipe.headers.clone();
            headers.retain(|(k, _)| k != "content-encoding" && k != "content-type" && k != "content-length");
            if gz {
                headers.push(("accept-encoding".into(), "gzip".into()));
            }
            let fetched = attack::fetch(url, &headers, attack::ClientOptions::default())
                .await
                .map_err(|e| RecipeError(format!("{path}.origin: fetching {url}: {e}")))?;
            if !(200..300).contains(&fetched.status) {
                return Err(RecipeError(format!("{path}.origin: fetching {url}: status {}", fetched.status)));
            }
            let came_gzipped = fetched
                .headers
                .get(http::header::CONTENT_ENCODING)
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
            let plain = if came_gzipped {
                gunzip(&fetched.body).map_err(|e| RecipeError(format!("{path}.origin: bad gzip from {url}: {e}")))?
            } else {
                fetched.body.to_vec()
            };
            fixed(plain)
        }
    })
}

/// fib(n), exactly, in decimal.
pub fn fibonacci(n: u32) -> String {
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
