//! A reorder buffer: items that may come up to a window after later ones (a run's results are
//! written as requests complete, a log's lines as they end) go out in time order, each once no
//! earlier one can still come. Memory is the window's items.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::source::Item;

/// Items waiting for the ones that may still come before them.
pub(crate) struct Reorder {
    heap: BinaryHeap<Reverse<(i64, u64, Slot)>>,
    newest_done: i64,
    order: u64,
    /// How long after later ones an item may still come, in microseconds.
    pub(crate) window_us: i64,
    /// The input has ended: everything left goes out.
    ended: bool,
}

/// A heap entry (ordered by time, then file order; the item itself is not compared).
struct Slot(Item);

impl PartialEq for Slot {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Slot {}
impl PartialOrd for Slot {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Slot {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl Reorder {
    pub(crate) fn new(window_us: i64) -> Reorder {
        Reorder { heap: BinaryHeap::new(), newest_done: i64::MIN, order: 0, window_us, ended: false }
    }

    /// Takes `item`, which completed at `done` (microseconds since the epoch).
    pub(crate) fn push(&mut self, item: Item, done: i64) {
        let time = item.parsed.as_ref().map_or(i64::MIN, |r| r.time_us);
        self.newest_done = self.newest_done.max(done);
        self.order += 1;
        self.heap.push(Reverse((time, self.order, Slot(item))));
    }

    /// The input has ended.
    pub(crate) fn end(&mut self) {
        self.ended = true;
    }

    /// What a source can hand out now: `Some(Some(item))`, `Some(None)` at the end of
    /// everything, or `None` when it must read on.
    pub(crate) fn ready(&mut self) -> Option<Option<Item>> {
        match self.pop() {
            Some(item) => Some(Some(item)),
            None => self.ended.then_some(None),
        }
    }

    /// The earliest item no later one can come before (all of them once the input has ended).
    fn pop(&mut self) -> Option<Item> {
        let Reverse((time, _, _)) = self.heap.peek()?;
        if self.ended || time.saturating_add(self.window_us) < self.newest_done {
            return self.heap.pop().map(|Reverse((_, _, Slot(item)))| item);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(time: i64) -> Item {
        let r = super::super::log::LogRequest {
            time_us: time,
            took_us: 0,
            precise: true,
            method: "GET".into(),
            path: "/x".into(),
            headers: Vec::new(),
            body: bytes::Bytes::new(),
        };
        Item { at: 0, parsed: Ok(r), text: String::new() }
    }

    #[test]
    fn the_reorder_buffer_releases_in_time_order_once_nothing_earlier_can_come() {
        let mut r = Reorder::new(super::super::runs::REORDER_US);
        r.push(item(5_000_000), 5_100_000);
        r.push(item(1_000_000), 6_000_000);
        assert!(r.pop().is_none(), "a request before them may still come");
        r.push(item(40_000_000), 40_000_000);
        let t = |i: Option<Item>| i.unwrap().parsed.unwrap().time_us;
        assert_eq!(t(r.pop()), 1_000_000);
        assert_eq!(t(r.pop()), 5_000_000);
        assert!(r.pop().is_none());
        r.end();
        assert_eq!(t(r.pop()), 40_000_000);
        assert!(matches!(r.ready(), Some(None)));
    }
}
