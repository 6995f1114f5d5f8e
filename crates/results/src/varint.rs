//! LEB128 varints and zigzag, written by hand: they sit on the per-record hot path of both the
//! writer and the reader, and are a few lines each.

#[inline]
pub fn put(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

#[inline]
pub(crate) fn put_signed(buf: &mut Vec<u8>, v: i64) {
    put(buf, ((v << 1) ^ (v >> 63)) as u64);
}

/// Reads a varint at `*pos`, advancing it; `None` when the input ends or the value overflows.
#[inline]
pub fn get(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

#[inline]
pub(crate) fn get_signed(buf: &[u8], pos: &mut usize) -> Option<i64> {
    let v = get(buf, pos)?;
    Some(((v >> 1) as i64) ^ -((v & 1) as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_edges() {
        let values = [0u64, 1, 127, 128, 300, 16383, 16384, u32::MAX as u64, u64::MAX];
        let mut buf = Vec::new();
        for v in values {
            put(&mut buf, v);
        }
        let mut pos = 0;
        for v in values {
            assert_eq!(get(&buf, &mut pos), Some(v));
        }
        assert_eq!(pos, buf.len());
        assert_eq!(get(&buf, &mut pos), None);
    }

    #[test]
    fn signed_round_trips() {
        let values = [0i64, -1, 1, -64, 64, i64::MIN, i64::MAX];
        let mut buf = Vec::new();
        for v in values {
            put_signed(&mut buf, v);
        }
        let mut pos = 0;
        for v in values {
            assert_eq!(get_signed(&buf, &mut pos), Some(v));
        }
    }

    #[test]
    fn small_values_take_one_byte() {
        let mut buf = Vec::new();
        put_signed(&mut buf, -3);
        put(&mut buf, 127);
        assert_eq!(buf.len(), 2);
    }

    #[test]
    fn rejects_overlong() {
        let buf = [0xffu8; 11];
        assert_eq!(get(&buf, &mut 0), None);
    }
}
