//! A change someone accepted (`history accept COMMIT --reason ...`): a confirmed change point
//! worse than a gate fails every check after it until a person says it was meant (a feature
//! that costs CPU, a new dependency), and the history keeps who said so and why.

use serde::Serialize;

/// One acceptance, as the history keeps it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Acceptance {
    /// The commit the change began at, as given (a prefix of 4 or more characters, or whole).
    pub commit: String,
    /// Only this plan's series (none: every plan's).
    pub plan: Option<String>,
    /// Only this metric's series (none: every metric's).
    pub metric: Option<String>,
    pub reason: String,
    pub who: String,
    pub at_unix_s: i64,
}

/// The shortest commit prefix an acceptance may name: shorter ones match too much.
pub const MIN_COMMIT: usize = 4;

impl Acceptance {
    /// It covers a change in `plan`'s series of `metric` that began at `commit`.
    pub fn covers(&self, plan: &str, metric: &str, commit: Option<&str>) -> bool {
        let commit_ok = commit.is_some_and(|c| c == self.commit || c.starts_with(&self.commit));
        commit_ok
            && self.plan.as_deref().is_none_or(|p| p == plan)
            && self.metric.as_deref().is_none_or(|m| m == metric)
    }

    /// `accepted by ana on 2026-11-26: "the new TLS stack"`.
    pub fn text(&self) -> String {
        let when = chrono::DateTime::from_timestamp(self.at_unix_s, 0)
            .map_or_else(|| self.at_unix_s.to_string(), |t| t.format("%Y-%m-%d").to_string());
        format!("accepted by {} on {when}: {:?}", self.who, self.reason)
    }
}

/// Who accepts, when not said: the CI's user, else the login.
pub fn who_default() -> String {
    ["GITHUB_ACTOR", "GITLAB_USER_LOGIN", "USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()))
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_acceptance_covers_its_commit_plan_and_metric() {
        let a = Acceptance {
            commit: "c0ffee12".into(),
            plan: None,
            metric: None,
            reason: "a new TLS stack".into(),
            who: "ana".into(),
            at_unix_s: 1_790_000_000,
        };
        assert!(a.covers("api", "p50", Some("c0ffee12")));
        assert!(a.covers("api", "p50", Some("c0ffee1234567890")));
        assert!(!a.covers("api", "p50", Some("c0ffee1")) && !a.covers("api", "p50", None));
        let other_plan = Acceptance { plan: Some("web".into()), ..a.clone() };
        assert!(!other_plan.covers("api", "p50", Some("c0ffee12")));
        let cpu_only = Acceptance { metric: Some("target_cpu".into()), ..a.clone() };
        assert!(!cpu_only.covers("api", "p50", Some("c0ffee12")));
        assert_eq!(a.text(), "accepted by ana on 2026-09-21: \"a new TLS stack\"");
    }
}
