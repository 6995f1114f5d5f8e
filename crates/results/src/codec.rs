//! The `.llr` results file.
//!
//! ```text
//! run    := MAGIC version:u8 header_len:u32le header_json crc32(header_json):u32le block* end?
//! block  := 'B' len:u32le payload crc32(payload):u32le
//! end    := 'E' len:u32le end_json? crc32(end_json):u32le   (empty when it says nothing more)
//! payload:= count:varint new_errors:varint (len:varint utf8)* new_targets:varint (len:varint utf8)*
//!            record*
//! ```
//!
//! The error and target tables grow as the run goes: a block lists the entries first used in it,
//! so a producer that learns its targets while streaming (an import) needs no second pass.
//!
//! Each record is a flag byte followed by varints, delta-encoded against the previous record of
//! the same block (blocks are self-contained but for the run's growing error table):
//! scheduled time (zigzag delta), latency, latency minus time to first byte, and, only when they
//! change, seq, target, status, bytes in (zigzag delta), bytes out, error, and a non-zero lag.
//! A typical record takes 7 to 9 bytes.
//!
//! The writer appends a block when it holds [`BLOCK_RECORDS`] records or when its owner calls
//! [`Writer::flush`] (the attack does so twice a second), so a killed process loses at most the
//! records not yet flushed. Files concatenate: a new MAGIC after a run starts another run. The
//! reader stops at the first damaged or truncated block with a warning and keeps what it read.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::sync::Arc;

use crate::error::{Error, ErrorKind};
use crate::record::{Record, RunEnd, RunHeader, FORMAT_VERSION};
use crate::varint;

/// The bytes a results file starts with (and every run in it).
pub const MAGIC: [u8; 8] = *b"\x89LLR\r\n\x1a\n";
const TAG_BLOCK: u8 = b'B';
const TAG_END: u8 = b'E';
/// Records per block before the writer appends it without waiting for a flush.
pub const BLOCK_RECORDS: u32 = 4096;
/// Refuse absurd lengths from damaged input rather than allocating them.
const MAX_SECTION: usize = 64 << 20;

const F_SEQ_NEXT: u8 = 1;
const F_SAME_TARGET: u8 = 1 << 1;
const F_SAME_STATUS: u8 = 1 << 2;
const F_SAME_BYTES_IN: u8 = 1 << 3;
const F_SAME_BYTES_OUT: u8 = 1 << 4;
const F_SAME_ERROR: u8 = 1 << 5;
const F_NEW_CONN: u8 = 1 << 6;
const F_NO_LAG: u8 = 1 << 7;

/// The state records are delta-encoded against; reset at each block.
#[derive(Default, Clone, Copy)]
struct Prev {
    seq: Option<u64>,
    target: u32,
    status: u16,
    bytes_in: u64,
    bytes_out: u64,
    error: u32,
    scheduled_us: u64,
}

/// Appends runs to a byte sink.
pub struct Writer<W: Write> {
    out: W,
    payload: Vec<u8>,
    count: u32,
    prev: Prev,
    errors: HashMap<String, u32>,
    new_errors: Vec<String>,
    targets: HashMap<String, u32>,
    new_targets: Vec<String>,
    frame: Vec<u8>,
}

impl<W: Write> Writer<W> {
    /// Writes the run header at once (and flushes it), so even an empty run is a valid file.
    pub fn new(mut out: W, header: &RunHeader) -> io::Result<Self> {
        let mut header = header.clone();
        header.version = FORMAT_VERSION;
        let json = serde_json::to_vec(&header).map_err(io::Error::other)?;
        let mut buf = Vec::with_capacity(json.len() + 17);
        buf.extend_from_slice(&MAGIC);
        buf.push(FORMAT_VERSION);
        buf.extend_from_slice(&(json.len() as u32).to_le_bytes());
        buf.extend_from_slice(&json);
        buf.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
        out.write_all(&buf)?;
        out.flush()?;
        Ok(Writer {
            out,
            payload: Vec::with_capacity(BLOCK_RECORDS as usize * 10),
            count: 0,
            prev: Prev::default(),
            errors: HashMap::new(),
            new_errors: Vec::new(),
            targets: header.targets.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect(),
            new_targets: Vec::new(),
            frame: Vec::new(),
        })
    }

    /// The index of a target (`METHOD URL`) in this run's table, adding it if new.
    pub fn intern_target(&mut self, target: &str) -> u32 {
        if let Some(&i) = self.targets.get(target) {
            return i;
        }
        let i = self.targets.len() as u32;
        self.targets.insert(target.to_owned(), i);
        self.new_targets.push(target.to_owned());
        i
    }

    /// The 1-based index of an error text in this run's table, adding it if new.
    pub fn intern_error(&mut self, text: &str) -> u32 {
        if let Some(&i) = self.errors.get(text) {
            return i;
        }
        let i = self.errors.len() as u32 + 1;
        self.errors.insert(text.to_owned(), i);
        self.new_errors.push(text.to_owned());
        i
    }

    /// Adds a record; its `error` must come from [`Writer::intern_error`] (or be 0).
    pub fn push(&mut self, r: &Record) -> io::Result<()> {
        let p = &mut self.prev;
        let mut flags = 0u8;
        let seq_next = p.seq.map_or(0, |s| s + 1);
        if r.seq == seq_next {
            flags |= F_SEQ_NEXT;
        }
        if r.target == p.target {
            flags |= F_SAME_TARGET;
        }
        if r.status == p.status {
            flags |= F_SAME_STATUS;
        }
        if r.bytes_in == p.bytes_in {
            flags |= F_SAME_BYTES_IN;
        }
        if r.bytes_out == p.bytes_out {
            flags |= F_SAME_BYTES_OUT;
        }
        if r.error == p.error {
            flags |= F_SAME_ERROR;
        }
        if r.new_conn {
            flags |= F_NEW_CONN;
        }
        if r.lag_us == 0 {
            flags |= F_NO_LAG;
        }
        let b = &mut self.payload;
        b.push(flags);
        varint::put_signed(b, r.scheduled_us.wrapping_sub(p.scheduled_us) as i64);
        varint::put(b, r.latency_us);
        varint::put(b, r.latency_us.saturating_sub(r.ttfb_us));
        if flags & F_SEQ_NEXT == 0 {
            varint::put_signed(b, r.seq.wrapping_sub(seq_next) as i64);
        }
        if flags & F_SAME_TARGET == 0 {
            varint::put(b, u64::from(r.target));
        }
        if flags & F_SAME_STATUS == 0 {
            varint::put(b, u64::from(r.status));
        }
        if flags & F_SAME_BYTES_IN == 0 {
            varint::put_signed(b, r.bytes_in.wrapping_sub(p.bytes_in) as i64);
        }
        if flags & F_SAME_BYTES_OUT == 0 {
            varint::put(b, r.bytes_out);
        }
        if flags & F_SAME_ERROR == 0 {
            varint::put(b, u64::from(r.error));
        }
        if flags & F_NO_LAG == 0 {
            varint::put(b, r.lag_us);
        }
        *p = Prev {
            seq: Some(r.seq),
            target: r.target,
            status: r.status,
            bytes_in: r.bytes_in,
            bytes_out: r.bytes_out,
            error: r.error,
            scheduled_us: r.scheduled_us,
        };
        self.count += 1;
        if self.count >= BLOCK_RECORDS {
            self.write_block()?;
        }
        Ok(())
    }

    fn write_block(&mut self) -> io::Result<()> {
        if self.count == 0 && self.new_errors.is_empty() && self.new_targets.is_empty() {
            return Ok(());
        }
        let f = &mut self.frame;
        f.clear();
        varint::put(f, u64::from(self.count));
        varint::put(f, self.new_errors.len() as u64);
        for e in self.new_errors.drain(..) {
            varint::put(f, e.len() as u64);
            f.extend_from_slice(e.as_bytes());
        }
        varint::put(f, self.new_targets.len() as u64);
        for t in self.new_targets.drain(..) {
            varint::put(f, t.len() as u64);
            f.extend_from_slice(t.as_bytes());
        }
        f.extend_from_slice(&self.payload);
        let crc = crc32fast::hash(f);
        self.out.write_all(&[TAG_BLOCK])?;
        self.out.write_all(&(f.len() as u32).to_le_bytes())?;
        self.out.write_all(f)?;
        self.out.write_all(&crc.to_le_bytes())?;
        self.payload.clear();
        self.count = 0;
        self.prev = Prev::default();
        Ok(())
    }

    /// Appends the pending records as a block and flushes the sink.
    pub fn flush(&mut self) -> io::Result<()> {
        self.write_block()?;
        self.out.flush()
    }

    /// The sink back, without an end marker (the run stays open, as a killed attack leaves it).
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Flushes, marks the run as cleanly ended, and hands the sink back.
    pub fn finish(self) -> io::Result<W> {
        self.finish_with(&RunEnd::complete())
    }

    /// Flushes and marks the run as ended with what `end` says (not sent, interrupted ...).
    pub fn finish_with(mut self, end: &RunEnd) -> io::Result<W> {
        self.write_block()?;
        let payload = if end.is_plain() { Vec::new() } else { serde_json::to_vec(end).map_err(io::Error::other)? };
        self.out.write_all(&[TAG_END])?;
        self.out.write_all(&(payload.len() as u32).to_le_bytes())?;
        self.out.write_all(&payload)?;
        self.out.write_all(&crc32fast::hash(&payload).to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// What the reader yields, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A run starts; the records that follow belong to it.
    Run(Arc<RunHeader>),
    /// A record of the current run. Its `error` indexes [`Reader::error_text`].
    Record(Record),
    /// The current run ended cleanly, saying what its end marker says.
    End(RunEnd),
}

/// Reads runs from a byte source, block by block.
pub struct Reader<R: Read> {
    input: R,
    name: String,
    offset: u64,
    block: Vec<u8>,
    pos: usize,
    remaining: u32,
    prev: Prev,
    errors: Vec<String>,
    targets: Vec<String>,
    in_run: bool,
    done: bool,
    warnings: Vec<String>,
    records_read: u64,
}

/// Outcome of trying to fill a buffer from the input.
enum Fill {
    Full,
    Eof,
    Partial,
}

impl<R: Read> Reader<R> {
    /// `name` is used in errors and warnings (a file name, or `stdin`).
    pub fn new(input: R, name: impl Into<String>) -> Self {
        Reader {
            input,
            name: name.into(),
            offset: 0,
            block: Vec::new(),
            pos: 0,
            remaining: 0,
            prev: Prev::default(),
            errors: Vec::new(),
            targets: Vec::new(),
            in_run: false,
            done: false,
            warnings: Vec::new(),
            records_read: 0,
        }
    }

    /// The input's name, as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Damage found so far (each a one-line message naming the input and the byte offset).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The text of a record's error (`None` for 0 or an unknown index).
    pub fn error_text(&self, index: u32) -> Option<&str> {
        if index == 0 {
            return None;
        }
        self.errors.get(index as usize - 1).map(String::as_str)
    }

    /// The current run's target table (`METHOD URL`), indexed by a record's `target`.
    pub fn targets(&self) -> &[String] {
        &self.targets
    }

    /// The current run's error table, in index order (index 1 first).
    pub fn error_table(&self) -> &[String] {
        &self.errors
    }

    fn fill(&mut self, buf: &mut [u8]) -> Result<Fill, Error> {
        let mut got = 0;
        while got < buf.len() {
            match self.input.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::new(&self.name, ErrorKind::Io(e.to_string()))),
            }
        }
        self.offset += got as u64;
        Ok(match got {
            0 => Fill::Eof,
            n if n == buf.len() => Fill::Full,
            _ => Fill::Partial,
        })
    }

    fn damaged(&mut self, at: u64, why: &str) {
        self.warnings
            .push(format!("{}: {} at byte {}; kept the {} records before it", self.name, why, at, self.records_read));
        self.done = true;
    }

    /// The next item, `Ok(None)` at the end. Damage after the first run header is a warning (see
    /// [`Reader::warnings`]) that ends the input; a source that is not a results file is an error.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Item>, Error> {
        loop {
            if self.done {
                return Ok(None);
            }
            if self.remaining > 0 {
                if let Some(r) = self.decode_record() {
                    self.remaining -= 1;
                    self.records_read += 1;
                    return Ok(Some(Item::Record(r)));
                }
                let at = self.offset;
                self.damaged(at, "undecodable record in block ending");
                return Ok(None);
            }
            let start = self.offset;
            let mut tag = [0u8; 1];
            match self.fill(&mut tag)? {
                Fill::Eof => {
                    if start == 0 {
                        return Err(Error::new(&self.name, ErrorKind::NotResults));
                    }
                    self.done = true;
                    return Ok(None);
                }
                Fill::Partial => unreachable!(),
                Fill::Full => {}
            }
            match tag[0] {
                b'\x89' => return self.read_header(start).map(|h| h.map(Item::Run)),
                TAG_BLOCK | TAG_END if self.in_run => {
                    let Some(payload_len) = self.read_frame(start)? else {
                        return Ok(None);
                    };
                    if tag[0] == TAG_END {
                        self.in_run = false;
                        let mut end: RunEnd = if payload_len == 0 {
                            RunEnd::default()
                        } else {
                            // An end that cannot be read still ends the run.
                            serde_json::from_slice(&self.block[..payload_len]).unwrap_or_default()
                        };
                        end.complete = true;
                        return Ok(Some(Item::End(end)));
                    }
                    if !self.start_block(payload_len) {
                        self.damaged(start, "malformed block");
                        return Ok(None);
                    }
                }
                _ if start == 0 => return Err(self.not_results(tag[0])),
                _ => {
                    self.damaged(start, "damaged block (unknown tag)");
                    return Ok(None);
                }
            }
        }
    }

    /// Not a results file: says what it looks like, when it looks like vegeta's output.
    fn not_results(&mut self, first: u8) -> Error {
        let mut head = [0u8; 128];
        head[0] = first;
        let got = match self.fill(&mut head[1..]) {
            Ok(Fill::Eof) | Err(_) => 1,
            Ok(_) => 1 + (self.offset as usize - 1).min(127),
        };
        let head = &head[..got];
        let has = |w: &[u8]| head.windows(w.len()).any(|x| x == w);
        let kind = if has(b"Result") && (has(b"Attack") || has(b"Seq") || has(b"Code")) {
            ErrorKind::Foreign("vegeta's binary (gob) results: convert them with `vegeta encode --to json FILE | loadlab encode --from vegeta-json -o FILE.llr`")
        } else if first == b'{' && has(b"\"timestamp\"") {
            ErrorKind::Foreign(
                "vegeta's JSON results: bring them in with `loadlab encode --from vegeta-json FILE -o FILE.llr`",
            )
        } else {
            ErrorKind::NotResults
        };
        Error::new(&self.name, kind)
    }

    fn read_header(&mut self, start: u64) -> Result<Option<Arc<RunHeader>>, Error> {
        let mut rest = [0u8; 12];
        match self.fill(&mut rest)? {
            Fill::Full => {}
            _ if start == 0 => return Err(Error::new(&self.name, ErrorKind::NotResults)),
            _ => {
                self.damaged(start, "truncated run header");
                return Ok(None);
            }
        }
        if rest[..7] != MAGIC[1..] {
            if start == 0 {
                return Err(Error::new(&self.name, ErrorKind::NotResults));
            }
            self.damaged(start, "damaged block (bad magic)");
            return Ok(None);
        }
        if rest[7] != FORMAT_VERSION {
            return Err(Error::new(&self.name, ErrorKind::Version(rest[7])));
        }
        let len = u32::from_le_bytes(rest[8..12].try_into().unwrap()) as usize;
        if len > MAX_SECTION {
            return Err(self.header_error(start, "header length out of range"));
        }
        let mut json = vec![0u8; len + 4];
        if !matches!(self.fill(&mut json)?, Fill::Full) {
            if start == 0 {
                return Err(self.header_error(start, "truncated"));
            }
            self.damaged(start, "truncated run header");
            return Ok(None);
        }
        let crc = u32::from_le_bytes(json[len..].try_into().unwrap());
        json.truncate(len);
        if crc32fast::hash(&json) != crc {
            return Err(self.header_error(start, "checksum mismatch"));
        }
        let header: RunHeader = serde_json::from_slice(&json).map_err(|e| self.header_error(start, &e.to_string()))?;
        self.errors.clear();
        self.targets = header.targets.clone();
        self.in_run = true;
        Ok(Some(Arc::new(header)))
    }

    fn header_error(&self, at: u64, why: &str) -> Error {
        Error::new(&self.name, ErrorKind::BadHeader(format!("{why} (at byte {at})")))
    }

    /// Reads a block frame's payload into `self.block`; `None` when the frame is damaged.
    fn read_frame(&mut self, start: u64) -> Result<Option<usize>, Error> {
        let mut len = [0u8; 4];
        if !matches!(self.fill(&mut len)?, Fill::Full) {
            self.damaged(start, "truncated block");
            return Ok(None);
        }
        let len = u32::from_le_bytes(len) as usize;
        if len > MAX_SECTION {
            self.damaged(start, "damaged block (length out of range)");
            return Ok(None);
        }
        let mut block = std::mem::take(&mut self.block);
        block.clear();
        block.resize(len + 4, 0);
        let filled = self.fill(&mut block)?;
        if !matches!(filled, Fill::Full) && len + 4 > 0 {
            self.block = block;
            self.damaged(start, "truncated block");
            return Ok(None);
        }
        let crc = u32::from_le_bytes(block[len..].try_into().unwrap());
        block.truncate(len);
        self.block = block;
        if crc32fast::hash(&self.block) != crc {
            self.damaged(start, "damaged block (checksum mismatch)");
            return Ok(None);
        }
        Ok(Some(len))
    }

    fn start_block(&mut self, _len: usize) -> bool {
        let mut pos = 0;
        let b = &self.block;
        let Some(count) = varint::get(b, &mut pos) else { return false };
        let Some(new_errors) = varint::get(b, &mut pos) else { return false };
        for _ in 0..new_errors {
            let Some(len) = varint::get(b, &mut pos) else { return false };
            let end = pos.saturating_add(len as usize);
            let Some(text) = b.get(pos..end) else { return false };
            self.errors.push(String::from_utf8_lossy(text).into_owned());
            pos = end;
        }
        let Some(new_targets) = varint::get(b, &mut pos) else { return false };
        for _ in 0..new_targets {
            let Some(len) = varint::get(b, &mut pos) else { return false };
            let end = pos.saturating_add(len as usize);
            let Some(text) = b.get(pos..end) else { return false };
            self.targets.push(String::from_utf8_lossy(text).into_owned());
            pos = end;
        }
        if count > u64::from(u32::MAX) {
            return false;
        }
        self.remaining = count as u32;
        self.pos = pos;
        self.prev = Prev::default();
        true
    }

    #[inline]
    fn decode_record(&mut self) -> Option<Record> {
        let b = &self.block;
        let pos = &mut self.pos;
        let p = &mut self.prev;
        let flags = *b.get(*pos)?;
        *pos += 1;
        let scheduled_us = p.scheduled_us.wrapping_add(varint::get_signed(b, pos)? as u64);
        let latency_us = varint::get(b, pos)?;
        let body_us = varint::get(b, pos)?;
        let seq_next = p.seq.map_or(0, |s| s + 1);
        let seq =
            if flags & F_SEQ_NEXT != 0 { seq_next } else { seq_next.wrapping_add(varint::get_signed(b, pos)? as u64) };
        let target = if flags & F_SAME_TARGET != 0 { p.target } else { varint::get(b, pos)? as u32 };
        let status = if flags & F_SAME_STATUS != 0 { p.status } else { varint::get(b, pos)? as u16 };
        let bytes_in = if flags & F_SAME_BYTES_IN != 0 {
            p.bytes_in
        } else {
            p.bytes_in.wrapping_add(varint::get_signed(b, pos)? as u64)
        };
        let bytes_out = if flags & F_SAME_BYTES_OUT != 0 { p.bytes_out } else { varint::get(b, pos)? };
        let error = if flags & F_SAME_ERROR != 0 { p.error } else { varint::get(b, pos)? as u32 };
        let lag_us = if flags & F_NO_LAG != 0 { 0 } else { varint::get(b, pos)? };
        *p = Prev { seq: Some(seq), target, status, bytes_in, bytes_out, error, scheduled_us };
        Some(Record {
            seq,
            target,
            scheduled_us,
            latency_us,
            ttfb_us: latency_us.saturating_sub(body_us),
            lag_us,
            status,
            bytes_in,
            bytes_out,
            error,
            new_conn: flags & F_NEW_CONN != 0,
        })
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod robustness;
