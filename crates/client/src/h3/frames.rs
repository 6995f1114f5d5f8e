//! HTTP/3 framing (RFC 9114 section 7): QUIC's variable-length integers, and a reader that
//! splits a stream's chunks into frames as they arrive, DATA without copying it.

use bytes::{Buf, Bytes, BytesMut};

pub(crate) const DATA: u64 = 0x0;
pub(crate) const HEADERS: u64 = 0x1;
pub(crate) const SETTINGS: u64 = 0x4;
pub(crate) const GOAWAY: u64 = 0x7;

/// Frames read whole are at most this long: a larger field section or control frame is the
/// server misbehaving, not a response to measure.
const MAX_FRAME: u64 = 1 << 20;

/// Appends `v` as a QUIC variable-length integer (RFC 9000 section 16).
pub(crate) fn put_varint(out: &mut Vec<u8>, v: u64) {
    match v {
        0..0x40 => out.push(v as u8),
        0x40..0x4000 => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        0x4000..0x4000_0000 => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// The variable-length integer at the start of `buf` and its length, or `None` when `buf`
/// ends before it does.
pub(crate) fn varint(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = 1usize << (first >> 6);
    let rest = buf.get(1..len)?;
    Some((rest.iter().fold(u64::from(first & 0x3f), |v, b| (v << 8) | u64::from(*b)), len))
}

/// A frame's type and length, then its payload.
pub(crate) fn put_frame_head(out: &mut Vec<u8>, kind: u64, len: u64) {
    put_varint(out, kind);
    put_varint(out, len);
}

/// What a stream carried.
#[derive(Debug, PartialEq)]
pub(crate) enum Part {
    /// Some of a DATA frame's payload, as it arrived.
    Data(Bytes),
    /// A whole frame of a type HTTP/3 defines (other than DATA), with its payload.
    Frame(u64, Bytes),
}

enum State {
    /// Between frames: the bytes of a frame head read so far.
    Head(Vec<u8>),
    Data(u64),
    Whole {
        kind: u64,
        left: usize,
        buf: BytesMut,
    },
    /// A reserved or unknown frame type, skipped as RFC 9114 section 9 asks.
    Skip(u64),
}

pub(crate) struct FrameReader {
    state: State,
}

impl FrameReader {
    pub(crate) fn new() -> FrameReader {
        FrameReader { state: State::Head(Vec::new()) }
    }

    /// The next part found in `chunk` (taken from its front), or `None` once `chunk` is used up
    /// inside a frame.
    pub(crate) fn next(&mut self, chunk: &mut Bytes) -> Result<Option<Part>, String> {
        loop {
            match &mut self.state {
                State::Head(head) => {
                    if chunk.is_empty() {
                        return Ok(None);
                    }
                    // A head is two varints; usually whole in the chunk, else gathered a byte at a time.
                    let parsed = if head.is_empty() {
                        frame_head(chunk).inspect(|(_, _, n)| chunk.advance(*n))
                    } else {
                        head.push(chunk.get_u8());
                        frame_head(head)
                    };
                    if let Some((kind, len, _)) = parsed {
                        if let Some(part) = self.start(kind, len)? {
                            return Ok(Some(part));
                        }
                    } else if head.is_empty() {
                        head.push(chunk.get_u8());
                    }
                }
                State::Data(left) | State::Skip(left) => {
                    if chunk.is_empty() {
                        return Ok(None);
                    }
                    let n = (*left).min(chunk.len() as u64) as usize;
                    *left -= n as u64;
                    let done = *left == 0;
                    let part = chunk.split_to(n);
                    let data = matches!(self.state, State::Data(_));
                    if done {
                        self.state = State::Head(Vec::new());
                    }
                    if data {
                        return Ok(Some(Part::Data(part)));
                    }
                }
                State::Whole { kind, left, buf } => {
                    if chunk.is_empty() {
                        return Ok(None);
                    }
                    let n = (*left).min(chunk.len());
                    *left -= n;
                    let kind = *kind;
                    // A frame within one chunk is a slice of it, copied only when split across chunks.
                    let payload = if buf.is_empty() && *left == 0 {
                        chunk.split_to(n)
                    } else {
                        buf.extend_from_slice(&chunk.split_to(n));
                        if *left > 0 {
                            continue;
                        }
                        std::mem::take(buf).freeze()
                    };
                    self.state = State::Head(Vec::new());
                    return Ok(Some(Part::Frame(kind, payload)));
                }
            }
        }
    }

    fn start(&mut self, kind: u64, len: u64) -> Result<Option<Part>, String> {
        self.state = match kind {
            DATA => State::Data(len),
            // HTTP/2's frame types that HTTP/3 reserves (section 7.2.8) are errors.
            0x2 | 0x6 | 0x8 | 0x9 => return Err(format!("frame type {kind:#x} is reserved")),
            // HTTP/3's own frames: CANCEL_PUSH, PUSH_PROMISE and MAX_PUSH_ID too, so that the
            // caller can refuse them where they do not belong.
            HEADERS | 0x3 | SETTINGS | 0x5 | GOAWAY | 0xd if len > MAX_FRAME => {
                return Err(format!("a frame of type {kind:#x} of {len} bytes"))
            }
            HEADERS | 0x3 | SETTINGS | 0x5 | GOAWAY | 0xd => {
                State::Whole { kind, left: len as usize, buf: BytesMut::new() }
            }
            _ => State::Skip(len),
        };
        if len == 0 {
            let empty = std::mem::replace(&mut self.state, State::Head(Vec::new()));
            if let State::Whole { kind, .. } = empty {
                return Ok(Some(Part::Frame(kind, Bytes::new())));
            }
        }
        Ok(None)
    }

    /// Whether the stream may end here: not inside a frame.
    pub(crate) fn at_boundary(&self) -> bool {
        matches!(&self.state, State::Head(head) if head.is_empty())
    }
}

/// A frame head at the start of `buf`: type, length, and how many bytes it took.
fn frame_head(buf: &[u8]) -> Option<(u64, u64, usize)> {
    let (kind, a) = varint(buf)?;
    let (len, b) = varint(&buf[a..])?;
    Some((kind, len, a + b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_as_rfc_9000_encodes_them() {
        // RFC 9000 appendix A.1's examples, and each length's bounds.
        for (bytes, v) in [
            (&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c][..], 151_288_809_941_952_652),
            (&[0x9d, 0x7f, 0x3e, 0x7d][..], 494_878_333),
            (&[0x7b, 0xbd][..], 15_293),
            (&[0x25][..], 37),
        ] {
            assert_eq!(varint(bytes), Some((v, bytes.len())));
            let mut out = vec![];
            put_varint(&mut out, v);
            assert_eq!(out, bytes);
        }
        assert_eq!(varint(&[0x40, 0x25]), Some((37, 2)), "a longer form than needed is still read");
        for v in [0, 63, 64, 16_383, 16_384, (1 << 30) - 1, 1 << 30, (1 << 62) - 1] {
            let mut out = vec![];
            put_varint(&mut out, v);
            assert_eq!(varint(&out), Some((v, out.len())));
            assert_eq!(varint(&out[..out.len() - 1]), None, "a cut varint is not read");
        }
    }

    /// A response: interim HEADERS, a grease frame, final HEADERS, two DATA frames, trailers.
    fn response() -> Vec<u8> {
        let mut out = vec![];
        for (kind, payload) in [
            (HEADERS, &b"\x00\x00\xff\x24"[..]),
            (0x21, &b"grease"[..]),
            (HEADERS, &b"\x00\x00\xd9"[..]),
            (DATA, &b"hello "[..]),
            (DATA, &[][..]),
            (DATA, &b"world"[..]),
            (HEADERS, &b"\x00\x00"[..]),
        ] {
            put_frame_head(&mut out, kind, payload.len() as u64);
            out.extend_from_slice(payload);
        }
        out
    }

    /// What the reader found: whole frames, the DATA joined, and whether it ended at a boundary.
    type Found = (Vec<(u64, Vec<u8>)>, Vec<u8>, bool);

    fn read(chunks: &[&[u8]]) -> Found {
        let mut r = FrameReader::new();
        let (mut frames, mut data) = (vec![], vec![]);
        for c in chunks {
            let mut c = Bytes::copy_from_slice(c);
            while let Some(part) = r.next(&mut c).unwrap() {
                match part {
                    Part::Data(d) => data.extend_from_slice(&d),
                    Part::Frame(kind, p) => frames.push((kind, p.to_vec())),
                }
            }
            assert!(c.is_empty());
        }
        (frames, data, r.at_boundary())
    }

    #[test]
    fn frames_are_found_however_the_stream_is_cut() {
        let whole = response();
        let expected = read(&[&whole]);
        assert_eq!(
            expected.0,
            vec![
                (HEADERS, b"\x00\x00\xff\x24".to_vec()),
                (HEADERS, b"\x00\x00\xd9".to_vec()),
                (HEADERS, b"\x00\x00".to_vec())
            ]
        );
        assert_eq!(expected.1, b"hello world");
        assert!(expected.2);
        for cut in 1..whole.len() {
            assert_eq!(read(&[&whole[..cut], &whole[cut..]]), expected, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = whole.chunks(1).collect();
        assert_eq!(read(&bytes), expected, "a byte at a time");
        assert!(!read(&[&whole[..whole.len() - 1]]).2, "a stream cut inside a frame is not at a boundary");
    }

    #[test]
    fn reserved_and_oversized_frames_are_errors() {
        let mut r = FrameReader::new();
        assert!(r.next(&mut Bytes::from_static(&[0x02, 0x00])).is_err(), "HTTP/2's PRIORITY");
        let mut huge = vec![];
        put_frame_head(&mut huge, HEADERS, MAX_FRAME + 1);
        assert!(FrameReader::new().next(&mut Bytes::from(huge)).is_err());
        // Unknown frame types are skipped (RFC 9114 section 9), however large: never gathered.
        let mut unknown = vec![];
        put_frame_head(&mut unknown, 0xb, 3);
        unknown.extend_from_slice(b"abc");
        assert_eq!(FrameReader::new().next(&mut Bytes::from(unknown)), Ok(None));
        let mut skip = vec![];
        put_frame_head(&mut skip, 0x21, 1 << 40);
        assert_eq!(FrameReader::new().next(&mut Bytes::from(skip)), Ok(None));
    }
}
