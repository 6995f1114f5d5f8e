//! One connection's socket and controls: faults that drop it (closed or reset), and the timeouts
//! that close a connection no request is using: one that sends nothing for `idle`, or whose next
//! request head is not complete `header` after its first byte (slowloris).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// How long a connection may sit without a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnLimits {
    /// From the first byte of a request head to its end.
    pub header: Duration,
    /// From the end of the last response (or the accept) to the next request head's first byte.
    pub idle: Duration,
}

/// nginx's client_header_timeout is 60 s and keepalive_timeout 75 s; a test origin sees only
/// load generators, which send a head in one write.
pub const DEFAULT_LIMITS: ConnLimits = ConnLimits { header: Duration::from_secs(10), idle: Duration::from_secs(75) };

impl Default for ConnLimits {
    fn default() -> Self {
        DEFAULT_LIMITS
    }
}

/// What the connection task and its requests share.
pub(crate) struct ConnCtl {
    /// 0 none, 1 close, 2 reset.
    abort: AtomicU8,
    notify: Notify,
    started: Instant,
    /// Requests being answered (HTTP/2 streams count one each).
    active: AtomicU32,
    /// Milliseconds from `started` to the last sign of use: a request starting or ending, or
    /// response bytes written.
    used_ms: AtomicU64,
    /// Milliseconds from `started` to the first byte read since then, or `u64::MAX`.
    head_from_ms: AtomicU64,
    head_started: AtomicBool,
}

impl ConnCtl {
    pub(crate) fn new() -> Arc<ConnCtl> {
        Arc::new(ConnCtl {
            abort: AtomicU8::new(0),
            notify: Notify::new(),
            started: Instant::now(),
            active: AtomicU32::new(0),
            used_ms: AtomicU64::new(0),
            head_from_ms: AtomicU64::new(u64::MAX),
            head_started: AtomicBool::new(false),
        })
    }

    /// Drops the connection: closed, or reset (RST).
    pub(crate) fn abort(&self, reset: bool) {
        self.abort.store(if reset { 2 } else { 1 }, Ordering::Release);
        self.notify.notify_one();
    }

    pub(crate) async fn aborted(&self) {
        self.notify.notified().await
    }

    /// Waits for a fault to drop the connection: whether it is a reset (else a close).
    pub(crate) async fn aborted_kind(&self) -> bool {
        self.notify.notified().await;
        self.abort.load(Ordering::Acquire) == 2
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    fn used(&self) {
        self.used_ms.store(self.now_ms(), Ordering::Relaxed);
        self.head_started.store(false, Ordering::Relaxed);
    }

    /// A request is being answered until the guard drops.
    pub(crate) fn request(self: &Arc<Self>) -> Active {
        self.active.fetch_add(1, Ordering::AcqRel);
        self.used();
        Active(Arc::clone(self))
    }

    fn read(&self) {
        if self.active.load(Ordering::Relaxed) == 0 && !self.head_started.swap(true, Ordering::Relaxed) {
            self.head_from_ms.store(self.now_ms(), Ordering::Relaxed);
        }
    }

    /// Resolves when the connection has gone unused past its limits.
    pub(crate) async fn expired(&self, limits: ConnLimits) {
        let ms = |d: Duration| d.as_millis().min(u64::MAX as u128 / 2) as u64;
        loop {
            let now = self.now_ms();
            let deadline = if self.active.load(Ordering::Acquire) > 0 {
                None
            } else if self.head_started.load(Ordering::Relaxed) {
                Some(self.head_from_ms.load(Ordering::Relaxed).saturating_add(ms(limits.header)))
            } else {
                Some(self.used_ms.load(Ordering::Relaxed).saturating_add(ms(limits.idle)))
            };
            match deadline {
                Some(d) if now >= d => return,
                // Looked at again at the deadline (or sooner: whatever happens meanwhile only
                // moves it later, except a head starting, which the shorter wait covers).
                Some(d) => {
                    let wait = (d - now).min(ms(limits.header)).max(10);
                    tokio::time::sleep(Duration::from_millis(wait)).await
                }
                None => tokio::time::sleep(limits.header.min(limits.idle).max(Duration::from_millis(10))).await,
            }
        }
    }
}

/// A request in progress (see [`ConnCtl::request`]).
pub(crate) struct Active(Arc<ConnCtl>);

impl Drop for Active {
    fn drop(&mut self) {
        self.0.used();
        self.0.active.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The connection's socket, which notes reads and writes for the timeouts and sets SO_LINGER to
/// 0 when it is dropped for a `reset` fault, so the close sends an RST. (Holding a second handle
/// on the socket for that instead cost a file descriptor per connection, which 10,000 idle
/// connections ran out of.)
pub(crate) struct FaultableStream {
    pub stream: tokio::net::TcpStream,
    pub ctl: Arc<ConnCtl>,
}

impl Drop for FaultableStream {
    fn drop(&mut self) {
        if self.ctl.abort.load(Ordering::Acquire) == 2 {
            let _ = socket2::SockRef::from(&self.stream).set_linger(Some(Duration::ZERO));
        }
    }
}

impl tokio::io::AsyncRead for FaultableStream {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.ctl.read();
        }
        r
    }
}

impl tokio::io::AsyncWrite for FaultableStream {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.stream).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.ctl.used();
        }
        r
    }
    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.ctl.used();
        }
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
    fn poll_flush(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_flush(cx)
    }
    fn poll_shutdown(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
