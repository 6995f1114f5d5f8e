//! Whether the target's kernel turned connections away: the listen-queue overflow counters
//! (`TcpExt: ListenOverflows ListenDrops` in /proc/net/netstat, counted for the whole network
//! namespace), read before and after a run against a loopback target. A connection whose SYN
//! found the accept queue full waits for the SYN's retransmission one second later, so its
//! request's latency is a second longer: the client's connection policy meeting a full queue,
//! not the server taking that long.

use std::time::Duration;

/// A connection this slow to open waited for a SYN retransmission (1 s, then 3 s ...).
pub(crate) const SLOW_CONNECT: Duration = Duration::from_millis(900);

/// ListenOverflows plus ListenDrops so far, where the kernel says.
pub(crate) fn listen_overflows() -> Option<u64> {
    parse(&std::fs::read_to_string("/proc/net/netstat").ok()?)
}

fn parse(netstat: &str) -> Option<u64> {
    let mut lines = netstat.lines().filter(|l| l.starts_with("TcpExt:"));
    let (names, values) = (lines.next()?, lines.next()?);
    let field = |name: &str| -> Option<u64> {
        let i = names.split_whitespace().position(|n| n == name)?;
        values.split_whitespace().nth(i)?.parse().ok()
    };
    // ListenDrops counts the overflows too (and other drops): the larger is the count.
    Some(field("ListenOverflows")?.max(field("ListenDrops").unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_overflow_counters() {
        let text = "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPHPHits\nTcpExt: 3 474 480 9\n\
                    IpExt: InNoRoutes\nIpExt: 0\n";
        assert_eq!(super::parse(text), Some(480));
        assert_eq!(super::parse("IpExt: A\nIpExt: 1\n"), None);
        assert!(super::listen_overflows().is_some(), "Linux says");
    }
}
