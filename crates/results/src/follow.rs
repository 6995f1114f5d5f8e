//! Reading a results file that is still being written (`report --every`): at its end, wait for
//! more until its run has ended cleanly or the writer has been quiet for a while.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::consumer::{Consumer, Entry};
use crate::record::{RunEnd, RunHeader};

/// How long a growing file may stay the same before its writer is taken to be gone.
pub const FOLLOW_IDLE: Duration = Duration::from_secs(5);

/// A reader that waits at the end of its input for more; feed its records to [`Follow::end_flag`]
/// too, so it stops as soon as the run has ended.
pub struct Follow<R> {
    inner: R,
    idle_since: Option<Instant>,
    idle: Duration,
    ended: Arc<AtomicBool>,
}

/// A consumer that tells its [`Follow`] when the run read ended cleanly.
pub struct EndFlag(Arc<AtomicBool>);

impl<R: Read> Follow<R> {
    pub fn new(inner: R) -> Follow<R> {
        Follow::with_idle(inner, FOLLOW_IDLE)
    }

    /// With another quiet time than [`FOLLOW_IDLE`].
    pub fn with_idle(inner: R, idle: Duration) -> Follow<R> {
        Follow { inner, idle_since: None, idle, ended: Arc::new(AtomicBool::new(false)) }
    }

    /// The consumer to feed alongside, which ends the wait at the run's end.
    pub fn end_flag(&self) -> EndFlag {
        EndFlag(Arc::clone(&self.ended))
    }
}

impl Consumer for EndFlag {
    fn start(&mut self, _: &RunHeader) -> std::io::Result<()> {
        Ok(())
    }
    fn record(&mut self, _: &Entry<'_>) -> std::io::Result<()> {
        Ok(())
    }
    fn end(&mut self, end: &RunEnd) -> std::io::Result<()> {
        self.0.store(end.complete, Ordering::Relaxed);
        Ok(())
    }
}

impl<R: Read> Read for Follow<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if self.ended.load(Ordering::Relaxed) {
                return Ok(0);
            }
            let n = self.inner.read(buf)?;
            if n > 0 || buf.is_empty() {
                self.idle_since = None;
                return Ok(n);
            }
            let since = *self.idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= self.idle {
                return Ok(0);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::time::{Duration, Instant};

    use super::Follow;

    /// Gives its chunks one read at a time, then nothing (a file not growing).
    struct Growing(Vec<Vec<u8>>);

    impl Read for Growing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Ok(0);
            }
            let chunk = self.0.remove(0);
            buf[..chunk.len()].copy_from_slice(&chunk);
            Ok(chunk.len())
        }
    }

    #[test]
    fn a_quiet_writer_ends_the_read_after_the_idle_time_and_an_ended_run_at_once() {
        let mut f = Follow::with_idle(Growing(vec![b"ab".to_vec()]), Duration::from_millis(300));
        let mut out = Vec::new();
        let started = Instant::now();
        f.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"ab");
        assert!(started.elapsed() >= Duration::from_millis(300));
        let mut f = Follow::with_idle(Growing(vec![]), Duration::from_secs(60));
        f.end_flag().0.store(true, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(f.read(&mut [0u8; 4]).unwrap(), 0);
    }
}
