//! The attack's arguments of a Job, checked as each pod will read them: by the attack's own
//! parser (so every spelling of a flag is seen: `-o x`, `-ox`, `--output=x`, `-output=x`), and by
//! the attack's own rules for a bounded load, here rather than in N pods that would all exit 2.

use clap::parser::ValueSource;
use clap::{Args, FromArgMatches};

use crate::args::vegeta::vegeta_style;
use crate::attack_cmd::args::AttackArgs;
use crate::bad;

/// Options the Job sets for each pod (argument ids of `attack`).
const OWN: [&str; 9] =
    ["shard", "shards", "start_at", "barrier", "live", "live_public", "live_linger", "output", "output_format"];

/// The attack's arguments as the pods get them (without a leading `attack`), once they parse.
pub fn check(args: &[String]) -> anyhow::Result<Vec<String>> {
    let args = match args.split_first() {
        Some((first, rest)) if first == "attack" => rest,
        _ => args,
    };
    let mut argv: Vec<std::ffi::OsString> = vec!["loadlab".into(), "attack".into()];
    argv.extend(args.iter().map(Into::into));
    let said = |why: &str| bad(format!("the attack's arguments (after --): {why}"));
    // The attack's own arguments under a root of their own, as the pods' `loadlab attack` reads them.
    let root = clap::Command::new("loadlab").subcommand(AttackArgs::augment_args(clap::Command::new("attack")));
    let argv = vegeta_style(&root, argv).map_err(|e| said(&e))?;
    let matches = root.clone().try_get_matches_from(argv).map_err(|e| {
        let text = e.render().to_string();
        said(text.lines().next().unwrap_or_default().trim_start_matches("error: "))
    })?;
    let attack = matches.subcommand_matches("attack").expect("parsed as attack");
    let command = root.find_subcommand("attack").expect("attack is a subcommand");
    for id in OWN {
        if attack.value_source(id) == Some(ValueSource::CommandLine) {
            let arg = command.get_arguments().find(|a| a.get_id() == id).expect("a known argument");
            let flag = arg.get_long().map_or_else(|| id.to_owned(), |l| format!("--{l}"));
            let why = match id {
                "output" | "output_format" => "each pod writes .llr results, gathered for `report`",
                _ => "the Job sets it for each pod",
            };
            return Err(bad(format!("{flag}: {why}; leave it out of the attack's arguments")));
        }
    }
    AttackArgs::from_arg_matches(attack)?.load.model().map_err(|e| said(&e))?;
    Ok(args.to_vec())
}

#[cfg(test)]
mod tests {
    use super::check;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    fn refused(s: &str) -> String {
        check(&words(s)).expect_err(s).to_string()
    }

    #[test]
    fn every_spelling_of_an_own_flag_is_refused() {
        let base = "http://svc/ --rate 10 --duration 1m";
        for own in ["-o x.llr", "-ox.llr", "--output x.llr", "--output=x.llr", "-output=x.llr", "-output x.llr"] {
            assert!(refused(&format!("{base} {own}")).starts_with("--output: each pod writes .llr"), "{own}");
        }
        for own in ["-live=0.0.0.0:1", "--live 127.0.0.1:0", "-shards 3", "--shard=1/2", "-barrier=a:1"] {
            assert!(refused(&format!("{base} {own}")).contains("the Job sets it for each pod"), "{own}");
        }
        assert!(refused(&format!("{base} --output-format json")).starts_with("--output-format:"));
        assert!(refused(&format!("{base} --start-at 1700000000")).starts_with("--start-at:"));
    }

    #[test]
    fn values_and_bounds_are_checked_by_the_attacks_rules() {
        assert!(refused("http://svc/ --rate fast --duration 1m").contains("invalid value 'fast' for '--rate"));
        assert!(refused("http://svc/ --rate 10").contains("--rate needs --duration"));
        assert!(refused("http://svc/ --bogus").contains("--bogus"));
        // A replay is split across pods as an open model's hits are (the log goes with --file).
        assert_eq!(check(&words("--replay a.log --base-url http://svc/ --speed 2")).unwrap().len(), 6);
        assert!(refused("http://svc/ -http2 false --rate 1 --duration 1s").contains("give booleans as -http2=false"));
    }

    #[test]
    fn a_leading_attack_is_the_subcommand_said_again() {
        let args = check(&words("attack http://svc/ -rate 10 -duration 1m")).unwrap();
        assert_eq!(args, words("http://svc/ -rate 10 -duration 1m"));
        assert_eq!(check(&words("--targets t.txt --connections 4 --requests 9")).unwrap().len(), 6);
    }
}
