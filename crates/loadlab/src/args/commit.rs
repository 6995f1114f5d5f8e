//! What the code under test is, one group for `lab run`, `history add` and `history check`.

use clap::Args;

/// What the code under test is: the commit, branch and tags a lab is recorded with.
#[derive(Args, Debug, Default)]
pub struct CommitArgs {
    /// The commit under test (default: GITHUB_SHA, CI_COMMIT_SHA, or `git rev-parse HEAD` in
    /// the plan's folder).
    #[arg(long)]
    pub commit: Option<String>,
    /// The branch (default: GITHUB_REF_NAME, CI_COMMIT_REF_NAME, or git's).
    #[arg(long)]
    pub branch: Option<String>,
    /// A free tag, KEY=VALUE (repeatable): --tag version=1.4
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
}

impl CommitArgs {
    pub fn given(&self) -> Result<lab::Given, String> {
        let mut g = lab::Given { commit: self.commit.clone(), branch: self.branch.clone(), ..Default::default() };
        for t in &self.tags {
            g.add_tag(t).map_err(|e| format!("--tag: {e}"))?;
        }
        Ok(g)
    }
}
