//! The one way the lab stops a child process it started (a target, perf): a signal, a grace
//! period to exit by itself, then SIGKILL, then a wait, so that no child outlives the lab.

use std::process::Child;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// Sends `signal` to `child` (to its whole process group with `group`: a shell and what it
/// started), waits up to `grace` for it to exit, then SIGKILLs it (and what is left of the group)
/// and waits. True when it exited within the grace period.
pub fn stop(child: &mut Child, signal: Signal, group: bool, grace: Duration) -> bool {
    let pid = Pid::from_raw(child.id() as i32);
    let send = |s: Signal| {
        let _ = if group { killpg(pid, s) } else { kill(pid, s) };
    };
    if let Ok(Some(_)) = child.try_wait() {
        if group {
            send(Signal::SIGKILL);
        }
        return true;
    }
    send(signal);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            // The leader is gone; make sure the rest of its group is too.
            if group {
                send(Signal::SIGKILL);
            }
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    send(Signal::SIGKILL);
    let _ = child.wait();
    false
}

/// The first step of [`stop`] for a process known only by its id (a child owned by a task being
/// dropped, which waits for it): `signal`, nothing more.
pub fn ask(pid: u32, signal: Signal) {
    let _ = kill(Pid::from_raw(pid as i32), signal);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_child_that_exits_on_the_signal_is_not_killed_and_one_that_ignores_it_is() {
        let mut polite = Command::new("sleep").arg("30").spawn().unwrap();
        assert!(stop(&mut polite, Signal::SIGTERM, false, Duration::from_secs(10)));
        assert!(polite.try_wait().unwrap().is_some());
        // A shell that ignores SIGTERM: killed after the grace period, and reaped.
        let mut stubborn = Command::new("sh").args(["-c", "trap '' TERM; sleep 30 & wait"]).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(!stop(&mut stubborn, Signal::SIGTERM, false, Duration::from_millis(300)));
        assert!(stubborn.try_wait().unwrap().is_some());
    }
}
