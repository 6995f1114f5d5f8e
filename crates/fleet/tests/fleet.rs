//! Workers of one sharded attack on loopback, through the library: they meet at the barrier
//! (one start time, one run id; worker 0 listens) and their results files gather on worker 0.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use attack::Shard;
use fleet::gather::Gathering;

fn folder(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("loadlab-fleet-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Worker `i` of `n`: meets the others at `addr`, writes its file in its own folder, gathers.
async fn worker(i: u64, n: u64, addr: String, dir: PathBuf, got: Arc<Mutex<Vec<String>>>) -> anyhow::Result<String> {
    let shard = Shard::new(i, n).unwrap();
    let start = fleet::barrier::meet(&addr, shard, Duration::from_secs(20)).await?;
    let run = start.run.clone();
    let own = dir.join(format!("w{i}.llr"));
    std::fs::write(&own, format!("results of worker {i}")).unwrap();
    let on_file: fleet::gather::OnFile = Arc::new(move |name, _| got.lock().unwrap().push(name.to_owned()));
    let g = Gathering::start(start, shard, &own, on_file);
    g.finish(&addr, shard, Duration::from_secs(20)).await?;
    Ok(run)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_meet_and_their_files_gather_on_worker_0() {
    let addr = format!("127.0.0.1:{}", free_port());
    let got = Arc::new(Mutex::new(Vec::new()));
    let dirs: Vec<PathBuf> = (0..3).map(|i| folder(&format!("w{i}"))).collect();
    let runs: Vec<_> =
        (0..3).map(|i| tokio::spawn(worker(i, 3, addr.clone(), dirs[i as usize].clone(), Arc::clone(&got)))).collect();
    let mut ids = Vec::new();
    for r in runs {
        ids.push(r.await.unwrap().unwrap());
    }
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "one run id: {ids:?}");
    // Worker 0's folder holds every file, each whole.
    for i in 1..3 {
        let text = std::fs::read_to_string(dirs[0].join(format!("w{i}.llr"))).unwrap();
        assert_eq!(text, format!("results of worker {i}"));
    }
    let mut names = got.lock().unwrap().clone();
    names.sort();
    assert_eq!(names, ["w0.llr", "w1.llr", "w2.llr"], "its own file is offered with the others");
    for d in dirs {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_never_arrives_or_never_sends_is_named() {
    // Alone at the barrier: it gives up after its timeout, saying why.
    let addr = format!("127.0.0.1:{}", free_port());
    let e = fleet::barrier::meet(&addr, Shard::new(0, 2).unwrap(), Duration::from_millis(500)).await.err().unwrap();
    assert!(e.to_string().contains("not every worker arrived"), "{e}");
    // Worker 1 arrives but never sends its file: worker 0's set is incomplete (exit 4 in the CLI).
    let addr = format!("127.0.0.1:{}", free_port());
    let (a0, a1) = (addr.clone(), addr.clone());
    let lead =
        tokio::spawn(
            async move { fleet::barrier::meet(&a0, Shard::new(0, 2).unwrap(), Duration::from_secs(20)).await },
        );
    let other = fleet::barrier::meet(&a1, Shard::new(1, 2).unwrap(), Duration::from_secs(20)).await.unwrap();
    let start = lead.await.unwrap().unwrap();
    assert_eq!(start.run, other.run);
    let dir = folder("incomplete");
    let own = dir.join("w0.llr");
    std::fs::write(&own, "results of worker 0").unwrap();
    let g = Gathering::start(start, Shard::new(0, 2).unwrap(), &own, Arc::new(|_, _| {}));
    let e = g.finish(&addr, Shard::new(0, 2).unwrap(), Duration::from_millis(500)).await.unwrap_err();
    assert!(e.downcast_ref::<fleet::collect::Incomplete>().is_some(), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}
