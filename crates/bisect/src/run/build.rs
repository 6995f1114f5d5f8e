//! A commit's build in its worktree (`builds::build`), its time and log kept with the commit.

use super::{Bisect, Tried};
use builds::Worktree;

impl Bisect<'_> {
    /// A worktree of the commit with its build done, or why not.
    pub(super) async fn build(&mut self, t: &mut Tried) -> Result<Worktree, String> {
        let short = t.commit.short().to_owned();
        let how = builds::Build {
            command: self.req.build.as_deref(),
            tree: std::env::temp_dir().join(format!("loadlab-bisect-{}-{short}", std::process::id())),
            log: self.req.out.join(format!("{short}-build.log")),
            timeout: self.req.build_timeout,
            stop: &self.signals.stop,
        };
        let say = self.say;
        let built =
            builds::build(&self.repo, &t.commit, &how, &|line| say(&format!("bisect: {line}"))).await.map_err(|e| {
                match e.contains("--build-timeout") {
                    true => format!("{e}; the commit skipped as one that does not build"),
                    false => e,
                }
            })?;
        t.build = built.build;
        Ok(built.tree)
    }
}
