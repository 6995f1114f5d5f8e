//! Files offered for download beside the live view: the results of a sharded run gathered on
//! worker 0 (`--collect`), served at `/results/` (an index) and `/results/NAME`, so that
//! `loadlab k8s collect` can copy them out of a pod that has no volume shared with anyone.
//! Only offered names are served: a request names an entry, never a path.

use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::{json, Value};

/// The files offered, and whether all expected ones were fetched whole.
#[derive(Debug)]
pub struct Shelf {
    inner: Mutex<Inner>,
    collected: tokio::sync::watch::Sender<bool>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Files to come in all (0: nothing is gathered here).
    expected: usize,
    files: Vec<Offered>,
}

#[derive(Debug)]
struct Offered {
    name: String,
    path: PathBuf,
    fetched: bool,
}

impl Default for Shelf {
    fn default() -> Self {
        Shelf { inner: Mutex::default(), collected: tokio::sync::watch::channel(false).0 }
    }
}

impl Shelf {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `n` files will be offered in all.
    pub fn expect(&self, n: usize) {
        self.lock().expected = n;
    }

    /// Offers `path` as `name` (a name offered again points to the new path).
    pub fn offer(&self, name: &str, path: PathBuf) {
        let mut inner = self.lock();
        inner.files.retain(|f| f.name != name);
        inner.files.push(Offered { name: name.to_owned(), path, fetched: false });
        inner.files.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// The index: what is offered, its size, and whether every expected file is there.
    pub(crate) fn index(&self) -> Value {
        let inner = self.lock();
        let files: Vec<Value> = inner
            .files
            .iter()
            .map(|f| json!({"name": f.name, "bytes": std::fs::metadata(&f.path).map_or(0, |m| m.len())}))
            .collect();
        json!({"expected": inner.expected, "complete": inner.expected > 0 && inner.files.len() >= inner.expected, "files": files})
    }

    /// The file offered as `name`.
    pub(crate) fn find(&self, name: &str) -> Option<PathBuf> {
        self.lock().files.iter().find(|f| f.name == name).map(|f| f.path.clone())
    }

    /// `name` was sent whole.
    pub(crate) fn fetched(&self, name: &str) {
        let mut inner = self.lock();
        if let Some(f) = inner.files.iter_mut().find(|f| f.name == name) {
            f.fetched = true;
        }
        if inner.expected > 0 && inner.files.len() >= inner.expected && inner.files.iter().all(|f| f.fetched) {
            self.collected.send_replace(true);
        }
    }

    /// Resolves once every expected file was offered and fetched whole at least once.
    pub async fn collected(&self) {
        let _ = self.collected.subscribe().wait_for(|c| *c).await;
    }
}

#[cfg(test)]
mod tests {
    use super::Shelf;

    #[tokio::test]
    async fn collected_when_every_expected_file_was_fetched() {
        let shelf = Shelf::default();
        shelf.expect(2);
        shelf.offer("b-1.llr", "/x/b-1.llr".into());
        shelf.fetched("b-1.llr");
        let early = tokio::time::timeout(std::time::Duration::from_millis(20), shelf.collected()).await;
        assert!(early.is_err(), "one of two files");
        shelf.offer("b-0.llr", "/x/b-0.llr".into());
        assert_eq!(shelf.index()["complete"], true);
        assert_eq!(shelf.index()["files"][0]["name"], "b-0.llr");
        assert!(shelf.find("../etc/passwd").is_none());
        shelf.fetched("b-0.llr");
        shelf.collected().await;
    }
}
