//! Damaged input of every shape: the reader never panics, keeps what it can, and says where.
use super::*;

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn mutated_files_never_panic() {
    let mut w = Writer::new(Vec::new(), &RunHeader { name: "fuzz".into(), ..Default::default() }).unwrap();
    let e = w.intern_error("boom");
    for i in 0..3000u64 {
        let r = Record {
            seq: i,
            scheduled_us: i * 333,
            latency_us: i % 977,
            status: 200,
            error: u32::from(i % 50 == 0) * e,
            ..Default::default()
        };
        w.push(&r).unwrap();
        if i % 700 == 0 {
            w.flush().unwrap();
        }
    }
    let good = w.finish().unwrap();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..3000 {
        let mut bytes = good.clone();
        match round % 3 {
            0 => {
                for _ in 0..1 + xorshift(&mut state) % 8 {
                    let i = (xorshift(&mut state) % bytes.len() as u64) as usize;
                    bytes[i] ^= (xorshift(&mut state) % 255 + 1) as u8;
                }
            }
            1 => bytes.truncate((xorshift(&mut state) % bytes.len() as u64) as usize),
            _ => {
                let i = (xorshift(&mut state) % bytes.len() as u64) as usize;
                let junk: Vec<u8> = (0..xorshift(&mut state) % 64).map(|_| xorshift(&mut state) as u8).collect();
                bytes.splice(i..i, junk);
            }
        }
        let mut r = Reader::new(&bytes[..], "fuzz.llr");
        let mut n = 0;
        loop {
            match r.next() {
                Ok(Some(Item::Record(_))) => n += 1,
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        assert!(n <= 3000 + 64, "round {round}: {n} records");
    }
}
