//! What every replay format yields: a [`Source`] of items (requests or skips, with their
//! recorded times, in time order), and the line reading the line formats share. Which source a
//! file is read by is `formats`'s choice.

use std::io::{BufRead, Read};

use super::log::{LogRequest, Skip};

/// A line longer than this is skipped (and read past), so memory stays bounded.
pub const MAX_LINE: usize = 64 * 1024;

/// One item of a source: where it is (a line, entry or record number) and what it holds.
pub(crate) struct Item {
    pub(crate) at: u64,
    pub(crate) parsed: Result<LogRequest, Skip>,
    /// The start of the item's text, quoted when it is skipped.
    pub(crate) text: String,
}

/// Requests in time order.
pub(crate) trait Source: Send {
    /// The next item; `Ok(None)` at the end; `Err` when the file cannot be read on.
    fn next(&mut self) -> Result<Option<Item>, String>;
}

/// Reads the next line of `input` into `buf` (at most [`MAX_LINE`] bytes kept): `None` at the
/// end, `Some(false)` for a longer line (read past).
pub(crate) fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>) -> Result<Option<bool>, String> {
    buf.clear();
    let n = input.take(MAX_LINE as u64 + 1).read_until(b'\n', buf).map_err(|e| e.to_string())?;
    if n == 0 {
        return Ok(None);
    }
    if buf.len() <= MAX_LINE {
        return Ok(Some(true));
    }
    let mut rest = Vec::new();
    while !buf.ends_with(b"\n") && !rest.ends_with(b"\n") {
        rest.clear();
        if input.take(MAX_LINE as u64).read_until(b'\n', &mut rest).map_err(|e| e.to_string())? == 0 {
            break;
        }
    }
    Ok(Some(false))
}

/// The start of a skipped item's text, for its quote.
pub(crate) fn excerpt(text: &[u8]) -> String {
    String::from_utf8_lossy(&text[..text.len().min(120)]).trim_end().to_owned()
}
