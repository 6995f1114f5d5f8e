//! The event loops an attack runs on.

use std::time::Duration;

use results::GeneratorCpu;

use crate::cpu::ThreadClock;

/// One single-threaded runtime per thread, idling until tasks are spawned onto it.
///
/// Each runtime also keeps a heartbeat timer due sooner than any request's timeout: tokio's time
/// driver wakes its own thread (an eventfd write) whenever a new timer is due earlier than every
/// pending one, which in the open model, with nothing in flight between sends, was every request
/// (strace: one extra write per request at 2000/s).
pub(crate) struct Runtimes {
    pub(crate) handles: Vec<tokio::runtime::Handle>,
    threads: Vec<(std::thread::JoinHandle<GeneratorCpu>, tokio::sync::oneshot::Sender<()>)>,
}

impl Runtimes {
    pub(crate) fn start(n: usize, heartbeat: Duration) -> std::io::Result<Runtimes> {
        let (mut handles, mut threads) = (Vec::new(), Vec::new());
        for i in 0..n.max(1) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            handles.push(rt.handle().clone());
            let (done, wait) = tokio::sync::oneshot::channel::<()>();
            let t = std::thread::Builder::new().name(format!("loadlab-worker-{i}")).spawn(move || {
                let clock = ThreadClock::start();
                rt.block_on(async {
                    tokio::pin!(wait);
                    loop {
                        tokio::select! {
                            _ = &mut wait => break,
                            _ = tokio::time::sleep(heartbeat) => {}
                        }
                    }
                });
                clock.used()
            })?;
            threads.push((t, done));
        }
        Ok(Runtimes { handles, threads })
    }

    pub(crate) fn handle(&self, i: usize) -> &tokio::runtime::Handle {
        &self.handles[i % self.handles.len()]
    }

    /// Stops the threads; returns what they used of the CPU.
    pub(crate) fn stop(self) -> GeneratorCpu {
        let mut used = GeneratorCpu::default();
        for (t, done) in self.threads {
            let _ = done.send(());
            if let Ok(u) = t.join() {
                used.add(&u);
            }
        }
        used
    }
}
