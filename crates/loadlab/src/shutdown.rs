//! One policy for SIGINT and SIGTERM, shared by every command that runs for a while (attack,
//! lab, demo, origin, `report --every`, and the live view's linger):
//!
//! - the first signal asks the command to stop: an attack or a lab finishes the requests in
//!   flight and writes what it has, a server stops accepting, a follower reports once more;
//! - the second stops at once (a lab still stops its targets and writes its reports);
//! - the command then exits 130 (SIGINT) or 143 (SIGTERM), 128 plus the signal's number as a
//!   shell reports a process killed by it, whatever it would have returned otherwise: what it
//!   wrote is whole, but covers less than was asked.
//!
//! Short commands (report, encode, plot) keep the default action, which a shell reports with the
//! same numbers.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

/// What the second signal does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Second {
    /// Cancels [`Shutdown::now`]: the command abandons its work but still ends by itself.
    Abandon,
    /// Exits the process at once with the signal's code.
    Exit,
}

/// The signals being watched, and the first one received.
pub struct Shutdown {
    stop: CancellationToken,
    now: CancellationToken,
    code: Arc<AtomicU8>,
}

impl Shutdown {
    /// Watches SIGINT and SIGTERM from now on (on a thread of its own, so a command that runs no
    /// runtime is covered too). `first` is said on stderr when the first signal arrives.
    pub fn watch(first: &'static str, second: Second) -> std::io::Result<Shutdown> {
        let shutdown = Shutdown {
            stop: CancellationToken::new(),
            now: CancellationToken::new(),
            code: Arc::new(AtomicU8::new(0)),
        };
        let (stop, now, code) = (shutdown.stop.clone(), shutdown.now.clone(), Arc::clone(&shutdown.code));
        let (ready, installed) = std::sync::mpsc::channel();
        std::thread::Builder::new().name("signals".into()).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_io().build() {
                Ok(r) => r,
                Err(e) => return drop(ready.send(Err(e))),
            };
            runtime.block_on(async move {
                use tokio::signal::unix::{signal, SignalKind};
                let (mut int, mut term) = match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
                    (Ok(i), Ok(t)) => (i, t),
                    (Err(e), _) | (_, Err(e)) => return drop(ready.send(Err(e))),
                };
                let _ = ready.send(Ok(()));
                loop {
                    let received = tokio::select! {
                        _ = int.recv() => 130,
                        _ = term.recv() => 143,
                    };
                    let _ = code.compare_exchange(0, received, Ordering::Relaxed, Ordering::Relaxed);
                    if !stop.is_cancelled() {
                        say(format_args!("\nloadlab: {first} (again to stop at once)"));
                        stop.cancel();
                        continue;
                    }
                    match second {
                        Second::Abandon => {
                            say(format_args!("\nloadlab: stopping now"));
                            now.cancel();
                        }
                        Second::Exit => std::process::exit(i32::from(code.load(Ordering::Relaxed))),
                    }
                }
            });
        })?;
        installed.recv().map_err(|_| std::io::Error::other("the signal watcher did not start"))??;
        Ok(shutdown)
    }

    /// Cancelled by the first signal.
    pub fn stop(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Cancelled by the second signal (under [`Second::Abandon`]).
    pub fn now(&self) -> CancellationToken {
        self.now.clone()
    }

    /// The exit status the first signal asks for (130 or 143), if one came.
    pub fn signalled(&self) -> Option<u8> {
        match self.code.load(Ordering::Relaxed) {
            0 => None,
            code => Some(code),
        }
    }

    /// The command's result under the policy (`exit::after_signal`): after a signal it is
    /// `Interrupted`, carrying any failure's message as its context.
    pub fn outcome(&self, result: anyhow::Result<()>) -> anyhow::Result<()> {
        crate::exit::after_signal(self.signalled(), result)
    }
}

/// A line on stderr, or nothing when stderr cannot be written (a closed pipe): `eprintln!` would
/// panic, and the signal would stop nothing.
fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}
