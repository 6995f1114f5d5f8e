//! The decoded size of a gzip or deflate response body (`--compressed`), counted as the bytes
//! arrive and thrown away: what Go's client, and so vegeta, reports as its bytes in.

use std::io::Write;

/// Counts what the decoder writes.
#[derive(Debug, Default)]
pub(crate) struct Count(u64);

impl Write for Count {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(crate) enum Decoder {
    Gzip(flate2::write::GzDecoder<Count>),
    Deflate(flate2::write::ZlibDecoder<Count>),
    /// The body was not valid in its encoding: counted up to the damage.
    Broken(u64),
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Decoder")
    }
}

impl Decoder {
    /// A decoder for a `Content-Encoding` value, if it is one we decode.
    pub(crate) fn for_encoding(value: &[u8]) -> Option<Decoder> {
        let v = value.trim_ascii();
        if v.eq_ignore_ascii_case(b"gzip") || v.eq_ignore_ascii_case(b"x-gzip") {
            Some(Decoder::Gzip(flate2::write::GzDecoder::new(Count::default())))
        } else if v.eq_ignore_ascii_case(b"deflate") {
            Some(Decoder::Deflate(flate2::write::ZlibDecoder::new(Count::default())))
        } else {
            None
        }
    }

    pub(crate) fn feed(&mut self, data: &[u8]) {
        let result = match self {
            Decoder::Gzip(d) => d.write_all(data),
            Decoder::Deflate(d) => d.write_all(data),
            Decoder::Broken(_) => return,
        };
        if result.is_err() {
            *self = Decoder::Broken(self.written());
        }
    }

    fn written(&self) -> u64 {
        match self {
            Decoder::Gzip(d) => d.get_ref().0,
            Decoder::Deflate(d) => d.get_ref().0,
            Decoder::Broken(n) => *n,
        }
    }

    /// Bytes decoded in all.
    pub(crate) fn finish(mut self) -> u64 {
        let _ = match &mut self {
            Decoder::Gzip(d) => d.try_finish(),
            Decoder::Deflate(d) => d.try_finish(),
            Decoder::Broken(_) => Ok(()),
        };
        self.written()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_gzip_and_deflate_decode_to() {
        let body = vec![b'a'; 100_000];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&body).unwrap();
        let gz = gz.finish().unwrap();
        let mut d = Decoder::for_encoding(b" GZIP ").unwrap();
        for chunk in gz.chunks(7) {
            d.feed(chunk);
        }
        assert_eq!(d.finish(), 100_000);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&body[..5000]).unwrap();
        let mut d = Decoder::for_encoding(b"deflate").unwrap();
        d.feed(&z.finish().unwrap());
        assert_eq!(d.finish(), 5000);
        assert!(Decoder::for_encoding(b"br").is_none());
        // Damage stops the count, it does not fail the request.
        let mut d = Decoder::for_encoding(b"gzip").unwrap();
        d.feed(b"not gzip at all");
        assert_eq!(d.finish(), 0);
    }
}
