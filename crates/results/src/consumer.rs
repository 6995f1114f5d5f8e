//! The one interface everything that takes records implements: the metrics, chart data, the
//! `.llr` writer, the vegeta exporters, a progress display, a lab's checks. An attack fans its
//! records out to a consumer while it runs; [`feed`] hands a file's runs to the same consumer, so
//! no command writes its own read loop and nothing re-reads a file it has just written.

use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};

use crate::codec::{Item, Reader, Writer};
use crate::error::Error;
use crate::record::{Record, RunEnd, RunHeader};

/// One request as consumers see it: the record with its texts resolved.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    pub record: &'a Record,
    /// `METHOD URL` of the record's target, when known.
    pub target: Option<&'a str>,
    /// The error text (a transport error, or the status line of an unsuccessful status).
    pub error: Option<&'a str>,
}

/// Takes runs record by record: `start`, then `record` for each request, then `end`.
/// `flush` is called about once a second while an attack runs (writers flush, displays redraw).
pub trait Consumer {
    fn start(&mut self, header: &RunHeader) -> io::Result<()>;
    fn record(&mut self, entry: &Entry<'_>) -> io::Result<()>;
    /// The run's end: `end.complete` is false when the source ended without its end marker (a
    /// killed attack, a truncated file).
    fn end(&mut self, end: &RunEnd) -> io::Result<()>;
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Reads every run of `reader` into `consumer`. Damage is left in [`Reader::warnings`]; a run cut
/// short ends with `complete = false`.
pub fn feed<R: Read>(reader: &mut Reader<R>, consumer: &mut (impl Consumer + ?Sized)) -> Result<(), Error> {
    let name = reader.name().to_owned();
    let io = |e: io::Error| Error::writing(&name, &e);
    let mut open = false;
    while let Some(item) = reader.next()? {
        match item {
            Item::Run(h) => {
                if open {
                    consumer.end(&RunEnd::incomplete()).map_err(io)?;
                }
                consumer.start(&h).map_err(io)?;
                open = true;
            }
            Item::Record(r) => {
                let entry = Entry {
                    record: &r,
                    target: reader.targets().get(r.target as usize).map(String::as_str),
                    error: reader.error_text(r.error),
                };
                consumer.record(&entry).map_err(io)?;
            }
            Item::End(end) => {
                consumer.end(&end).map_err(io)?;
                open = false;
            }
        }
    }
    if open {
        consumer.end(&RunEnd::incomplete()).map_err(io)?;
    }
    Ok(())
}

/// A consumer that leaves out each run's warm-up, as the lab that wrote it counted: the records
/// scheduled before the header's `warmup` (a lab's step file holds its warm-up and its step
/// together). What it left out is counted, for a reader to be told.
pub struct WithoutWarmup<C> {
    pub inner: C,
    warmup_us: u64,
    /// Records left out, and the longest warm-up met (µs).
    pub left_out: u64,
    pub longest_us: u64,
}

impl<C: Consumer> WithoutWarmup<C> {
    pub fn new(inner: C) -> WithoutWarmup<C> {
        WithoutWarmup { inner, warmup_us: 0, left_out: 0, longest_us: 0 }
    }
}

impl<C: Consumer> Consumer for WithoutWarmup<C> {
    fn start(&mut self, header: &RunHeader) -> io::Result<()> {
        self.warmup_us = header.warmup_us();
        self.longest_us = self.longest_us.max(self.warmup_us);
        self.inner.start(header)
    }
    fn record(&mut self, entry: &Entry<'_>) -> io::Result<()> {
        if entry.record.scheduled_us < self.warmup_us {
            self.left_out += 1;
            return Ok(());
        }
        self.inner.record(entry)
    }
    fn end(&mut self, end: &RunEnd) -> io::Result<()> {
        self.inner.end(end)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A reference or a box forwards every call to what it points at.
macro_rules! forward_consumer {
    ($($ty:ty),+) => {$(
        impl<C: Consumer + ?Sized> Consumer for $ty {
            fn start(&mut self, header: &RunHeader) -> io::Result<()> {
                (**self).start(header)
            }
            fn record(&mut self, entry: &Entry<'_>) -> io::Result<()> {
                (**self).record(entry)
            }
            fn end(&mut self, end: &RunEnd) -> io::Result<()> {
                (**self).end(end)
            }
            fn flush(&mut self) -> io::Result<()> {
                (**self).flush()
            }
        }
    )+};
}
forward_consumer!(&mut C, Box<C>);

/// A consumer shared with another thread (a live report reading it while records arrive).
impl<C: Consumer> Consumer for Arc<Mutex<C>> {
    fn start(&mut self, header: &RunHeader) -> io::Result<()> {
        self.lock().unwrap_or_else(|e| e.into_inner()).start(header)
    }
    fn record(&mut self, entry: &Entry<'_>) -> io::Result<()> {
        self.lock().unwrap_or_else(|e| e.into_inner()).record(entry)
    }
    fn end(&mut self, end: &RunEnd) -> io::Result<()> {
        self.lock().unwrap_or_else(|e| e.into_inner()).end(end)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.lock().unwrap_or_else(|e| e.into_inner()).flush()
    }
}

/// An optional consumer: `None` takes nothing.
impl<C: Consumer> Consumer for Option<C> {
    fn start(&mut self, header: &RunHeader) -> io::Result<()> {
        self.as_mut().map_or(Ok(()), |c| c.start(header))
    }
    fn record(&mut self, entry: &Entry<'_>) -> io::Result<()> {
        self.as_mut().map_or(Ok(()), |c| c.record(entry))
    }
    fn end(&mut self, end: &RunEnd) -> io::Result<()> {
        self.as_mut().map_or(Ok(()), |c| c.end(end))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.as_mut().map_or(Ok(()), |c| c.flush())
    }
}

/// Any number of consumers, each seeing every call in order.
impl<C: Consumer> Consumer for Vec<C> {
    fn start(&mut self, header: &RunHeader) -> io::Result<()> {
        self.iter_mut().try_for_each(|c| c.start(header))
    }
    fn record(&mut self, entry: &Entry<'_>) -> io::Result<()> {
        self.iter_mut().try_for_each(|c| c.record(entry))
    }
    fn end(&mut self, end: &RunEnd) -> io::Result<()> {
        self.iter_mut().try_for_each(|c| c.end(end))
    }
    fn flush(&mut self) -> io::Result<()> {
        self.iter_mut().try_for_each(|c| c.flush())
    }
}

/// No consumer: the attack keeps only its metrics.
impl Consumer for () {
    fn start(&mut self, _: &RunHeader) -> io::Result<()> {
        Ok(())
    }
    fn record(&mut self, _: &Entry<'_>) -> io::Result<()> {
        Ok(())
    }
    fn end(&mut self, _: &RunEnd) -> io::Result<()> {
        Ok(())
    }
}

/// Tuples fan out to their members in order, keeping each member's type for the caller.
macro_rules! tuple_consumer {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: Consumer),+> Consumer for ($($name,)+) {
            fn start(&mut self, header: &RunHeader) -> io::Result<()> {
                $(self.$idx.start(header)?;)+
                Ok(())
            }
            fn record(&mut self, entry: &Entry<'_>) -> io::Result<()> {
                $(self.$idx.record(entry)?;)+
                Ok(())
            }
            fn end(&mut self, end: &RunEnd) -> io::Result<()> {
                $(self.$idx.end(end)?;)+
                Ok(())
            }
            fn flush(&mut self) -> io::Result<()> {
                $(self.$idx.flush()?;)+
                Ok(())
            }
        }
    };
}
tuple_consumer!(A 0);
tuple_consumer!(A 0, B 1);
tuple_consumer!(A 0, B 1, C 2);
tuple_consumer!(A 0, B 1, C 2, D 3);

/// Writes runs as `.llr`: the results file as a consumer. The header is written when a run
/// starts; error and target texts are interned into the file's own tables.
pub struct LlrWriter<W: Write> {
    out: Option<W>,
    writer: Option<Writer<W>>,
}

impl<W: Write> LlrWriter<W> {
    pub fn new(out: W) -> Self {
        LlrWriter { out: Some(out), writer: None }
    }

    /// The sink back, once every run has ended (`None` while a run is still open).
    pub fn into_inner(self) -> Option<W> {
        self.out
    }
}

impl<W: Write> Consumer for LlrWriter<W> {
    fn start(&mut self, header: &RunHeader) -> io::Result<()> {
        if self.writer.is_some() {
            self.end(&RunEnd::incomplete())?;
        }
        let out = self.out.take().ok_or_else(|| io::Error::other("results writer lost its output"))?;
        self.writer = Some(Writer::new(out, header)?);
        Ok(())
    }

    fn record(&mut self, entry: &Entry<'_>) -> io::Result<()> {
        let Some(w) = &mut self.writer else { return Err(io::Error::other("a record before its run's header")) };
        let mut r = *entry.record;
        r.error = entry.error.map_or(0, |e| w.intern_error(e));
        if let Some(t) = entry.target {
            r.target = w.intern_target(t);
        }
        w.push(&r)
    }

    /// A complete run gets its end marker (with what the end says); an incomplete one is flushed
    /// without it, so the copy says what the source said.
    fn end(&mut self, end: &RunEnd) -> io::Result<()> {
        if let Some(mut w) = self.writer.take() {
            self.out = Some(if end.complete {
                w.finish_with(end)?
            } else {
                w.flush()?;
                w.into_inner()
            });
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.as_mut().map_or(Ok(()), |w| w.flush())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Metrics;

    /// Remembers every call, to compare what two consumers saw.
    #[derive(Default)]
    struct Log(Vec<String>);

    impl Consumer for Log {
        fn start(&mut self, h: &RunHeader) -> io::Result<()> {
            self.0.push(format!("start {}", h.name));
            Ok(())
        }
        fn record(&mut self, e: &Entry<'_>) -> io::Result<()> {
            self.0.push(format!("{} {} {:?} {:?}", e.record.seq, e.record.status, e.target, e.error));
            Ok(())
        }
        fn end(&mut self, end: &RunEnd) -> io::Result<()> {
            self.0.push(format!("end {}", end.complete));
            Ok(())
        }
    }

    fn header(name: &str) -> RunHeader {
        RunHeader {
            name: name.into(),
            start_unix_ns: 1_000_000_000,
            targets: vec!["GET http://127.0.0.1/".into()],
            ..Default::default()
        }
    }

    fn file(runs: &[(&str, u64, bool)]) -> Vec<u8> {
        let mut out = Vec::new();
        for &(name, n, complete) in runs {
            let mut w = Writer::new(&mut out, &header(name)).unwrap();
            let e = w.intern_error("500 Internal Server Error");
            for seq in 0..n {
                let status = if seq % 3 == 2 { 500 } else { 200 };
                let r = Record {
                    seq,
                    scheduled_us: seq * 1000,
                    latency_us: 100 + seq,
                    ttfb_us: 50,
                    status,
                    error: if status == 500 { e } else { 0 },
                    ..Default::default()
                };
                w.push(&r).unwrap();
            }
            if complete {
                w.finish().unwrap();
            } else {
                w.flush().unwrap();
            }
        }
        out
    }

    #[test]
    fn two_consumers_see_the_same_calls_in_order() {
        let bytes = file(&[("a", 5, true), ("b", 4, true)]);
        let mut both = (Log::default(), Log::default());
        feed(&mut Reader::new(&bytes[..], "t.llr"), &mut both).unwrap();
        assert_eq!(both.0 .0, both.1 .0);
        let log = &both.0 .0;
        assert_eq!(log.len(), 2 + 5 + 4 + 2);
        assert_eq!(log[0], "start a");
        assert_eq!(log[3], "2 500 Some(\"GET http://127.0.0.1/\") Some(\"500 Internal Server Error\")");
        assert_eq!(log[6], "end true");
        assert_eq!(log[7], "start b");
        // A Vec of boxed consumers fans out the same way.
        let mut many: Vec<Box<dyn Consumer>> = vec![Box::new(Log::default()), Box::new(Log::default())];
        feed(&mut Reader::new(&bytes[..], "t.llr"), &mut many).unwrap();
    }

    #[test]
    fn a_truncated_run_ends_incomplete() {
        let bytes = file(&[("a", 3, false)]);
        let mut log = Log::default();
        feed(&mut Reader::new(&bytes[..], "t.llr"), &mut log).unwrap();
        assert_eq!(log.0.last().unwrap(), "end false");
    }

    #[test]
    fn the_llr_writer_copies_a_file_exactly() {
        let bytes = file(&[("a", 50, true), ("b", 7, true)]);
        let mut copy = (LlrWriter::new(Vec::new()), Metrics::new());
        feed(&mut Reader::new(&bytes[..], "t.llr"), &mut copy).unwrap();
        let out = copy.0.into_inner().unwrap();
        assert_eq!(out, bytes);
        assert_eq!(copy.1.requests, 57);
        assert_eq!(copy.1.errors.get("500 Internal Server Error"), Some(&(16 + 2)));
    }
}
