//! Two labs run as one duet (`lab ab`'s pairs at once): each waits for the other before each of
//! its steps, so both builds take every load point at the same moments, on the same CPUs, and a
//! slow spell of the machine falls on both alike (docs/DECISIONS.md, "Both builds at once").
//!
//! Both start each step at one moment agreed between them, the second lab's schedule half a
//! request's interval after the first's, so that the two builds' requests take turns on the
//! CPUs they share: started together, one build's every request would wait for the other's
//! (the Python server's p50 read +100% in A/A pairs).
//!
//! A lab that is done, stopped or gone no longer holds the other back: its side of the channel
//! says so, or is dropped with the lab's options.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::sync::watch;

use crate::run::cpu::Watched;
use crate::run::placement::Placement;

/// Where one lab of a duet stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    /// Bringing its targets up.
    Starting,
    /// Ready for its step of this index (or running it).
    Step(usize),
    /// Its steps are over.
    Done,
}

/// How far ahead of a step's start the two labs agree on it: time for each to set its step up.
const LEAD: Duration = Duration::from_millis(50);

/// One lab's part in a duet: [`Duet::pair`] makes the two.
#[derive(Debug)]
pub struct Duet {
    mine: watch::Sender<At>,
    theirs: watch::Receiver<At>,
    /// Each lab's started targets, whose CPU the other lab's machine figures count as known.
    my_targets: Arc<Mutex<Vec<Watched>>>,
    their_targets: Arc<Mutex<Vec<Watched>>>,
    /// Each step's start, as the first of the two to reach it set it.
    starts: Arc<Mutex<BTreeMap<usize, SystemTime>>>,
    /// Whether this lab's requests go first (the other's half an interval later).
    leads: bool,
    /// The CPUs both labs' processes run on (none: wherever the scheduler puts them). The caller
    /// pins loadlab's threads for the pair; each lab starts its targets on `targets`.
    pub placement: Option<Placement>,
}

impl Duet {
    /// Two linked parts, one for each lab.
    pub fn pair(placement: Option<Placement>) -> (Duet, Duet) {
        let (a_tx, a_rx) = watch::channel(At::Starting);
        let (b_tx, b_rx) = watch::channel(At::Starting);
        let (a_targets, b_targets) = (Arc::default(), Arc::default());
        let starts: Arc<Mutex<BTreeMap<usize, SystemTime>>> = Arc::default();
        (
            Duet {
                mine: a_tx,
                theirs: b_rx,
                my_targets: Arc::clone(&a_targets),
                their_targets: Arc::clone(&b_targets),
                starts: Arc::clone(&starts),
                leads: true,
                placement: placement.clone(),
            },
            Duet {
                mine: b_tx,
                theirs: a_rx,
                my_targets: b_targets,
                their_targets: a_targets,
                starts,
                leads: false,
                placement,
            },
        )
    }

    /// This lab's targets are up: their processes, for the other lab to read.
    pub(crate) fn offer(&self, targets: Vec<Watched>) {
        *self.my_targets.lock().unwrap_or_else(|e| e.into_inner()) = targets;
    }

    /// The other lab's targets, as far as it has offered them.
    pub(crate) fn companions(&self) -> Vec<Watched> {
        self.their_targets.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Waits until the other lab is ready for step `index` too (or past it, or done), and gives
    /// the moment this lab's step starts: the same for both, the second lab's half `interval`
    /// (a request's, at the step's rate) later.
    pub(crate) async fn arrive(&self, index: usize, interval: Option<Duration>) -> SystemTime {
        self.mine.send_replace(At::Step(index));
        let mut theirs = self.theirs.clone();
        // An Err: the other lab's part is gone, so nothing to wait for.
        let _ = theirs
            .wait_for(|at| match at {
                At::Starting => false,
                At::Step(j) => *j >= index,
                At::Done => true,
            })
            .await;
        let at = *self
            .starts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(index)
            .or_insert_with(|| SystemTime::now() + LEAD);
        match (self.leads, interval) {
            (false, Some(every)) => at + every / 2,
            _ => at,
        }
    }

    /// This lab's steps are over: the other goes on alone. Returns once the other's are over
    /// too (or it is gone), so that neither lab stops its targets while the other still reads
    /// them.
    pub(crate) async fn done(&self) {
        self.mine.send_replace(At::Done);
        let mut theirs = self.theirs.clone();
        let _ = theirs.wait_for(|at| *at == At::Done).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn each_waits_for_the_other_and_neither_for_one_that_is_done() {
        let (a, b) = Duet::pair(None);
        // b reaches step 0 a second after a: a waits for it.
        let slow_b = async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            b.arrive(0, None).await;
            tokio::time::Instant::now()
        };
        let t0 = tokio::time::Instant::now();
        let (_, b_at) = tokio::join!(async { a.arrive(0, None).await }, slow_b);
        assert_eq!(b_at - t0, Duration::from_secs(1));
        let waited = tokio::time::timeout(Duration::from_secs(5), async {
            let t = tokio::time::Instant::now();
            tokio::join!(a.arrive(1, None), async {
                tokio::time::sleep(Duration::from_secs(2)).await;
                b.arrive(1, None).await
            });
            t.elapsed()
        })
        .await
        .expect("both went on");
        assert_eq!(waited, Duration::from_secs(2));
        // b skips step 2 (its target is down) and arrives at 3: a's step 2 goes on, and b's
        // step 3 waits for a's.
        tokio::time::timeout(Duration::from_secs(1), async {
            tokio::join!(
                async {
                    a.arrive(2, None).await;
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    a.arrive(3, None).await
                },
                async {
                    let t = tokio::time::Instant::now();
                    b.arrive(3, None).await;
                    assert_eq!(t.elapsed(), Duration::from_millis(500));
                }
            )
        })
        .await
        .expect("a step the other passed is not waited for");
        // b is done: a goes on alone, and b waits for a to be done before it stops its targets.
        let (b_over, _) = tokio::join!(
            async {
                b.done().await;
                tokio::time::Instant::now()
            },
            async {
                tokio::time::timeout(Duration::from_secs(1), a.arrive(7, None)).await.expect("the other is done");
                tokio::time::sleep(Duration::from_secs(3)).await;
                a.done().await
            }
        );
        assert!(b_over - t0 >= Duration::from_secs(3) + waited, "b waited for a's last step");
        // A part dropped (its lab gone) holds nothing back either.
        let (c, d) = Duet::pair(None);
        drop(d);
        tokio::time::timeout(Duration::from_secs(1), async {
            c.arrive(0, None).await;
            c.done().await
        })
        .await
        .expect("the other is gone");
    }

    #[tokio::test]
    async fn both_start_a_step_at_one_moment_the_second_half_an_interval_later() {
        let (a, b) = Duet::pair(None);
        let every = Duration::from_millis(20);
        let before = SystemTime::now();
        let (first, second) = tokio::join!(a.arrive(0, Some(every)), b.arrive(0, Some(every)));
        assert_eq!(second.duration_since(first).unwrap(), Duration::from_millis(10));
        // Set ahead of both, for each to set its step up; a closed model's step has no interval.
        assert!(first.duration_since(before).unwrap() >= LEAD);
        let (first, second) = tokio::join!(b.arrive(1, None), a.arrive(1, None));
        assert_eq!(first, second);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lab_waits_while_the_other_runs_its_step() {
        let (a, b) = Duet::pair(None);
        // b is still bringing its targets up: a cannot start its first step.
        assert!(tokio::time::timeout(Duration::from_secs(3), a.arrive(0, None)).await.is_err());
        b.arrive(0, None).await;
        // b is at step 0 (running it): a's step 1 waits for b's.
        assert!(tokio::time::timeout(Duration::from_secs(3), a.arrive(1, None)).await.is_err());
        tokio::join!(a.arrive(1, None), b.arrive(1, None));
    }
}
