//! vegeta's single-dash long flags, read as clap reads double-dash ones.

use clap::ArgAction;

/// vegeta's habit of single-dash long flags (`-rate 100`, `-http2=false`, `report -type json`):
/// a word after a single dash that names a long flag of the command becomes `--word`. Short
/// flags (`-H`, `-o`) and negative numbers are left alone. A boolean flag followed by `true` or
/// `false` as a word of its own is refused with why: Go's flag package (vegeta's) reads
/// `-http2 false` as `-http2` and stops at `false`, ignoring every flag after it, so a command
/// line written that way never did what it says. `root` is the command tree the line is for.
pub fn vegeta_style(root: &clap::Command, args: Vec<std::ffi::OsString>) -> Result<Vec<std::ffi::OsString>, String> {
    let mut cmd: Option<clap::Command> = None;
    let mut out = Vec::with_capacity(args.len());
    for (i, a) in args.into_iter().enumerate() {
        let Some(s) = a.to_str().map(str::to_owned) else {
            out.push(a);
            continue;
        };
        if i > 0 && cmd.is_none() && !s.starts_with('-') {
            cmd = root.find_subcommand(&s).cloned();
        }
        let single = s.len() > 2
            && s.starts_with('-')
            && !s.starts_with("--")
            && s[1..2].chars().all(|c| c.is_ascii_alphabetic());
        if let Some(flag) = out.last().and_then(|f| f.to_str()).filter(|_| s == "true" || s == "false") {
            let name = flag.trim_start_matches('-');
            let boolean = |arg: &clap::Arg| {
                matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse)
                    || arg.get_possible_values().iter().any(|v| v.get_name() == "false")
            };
            let is_bool = flag.starts_with('-')
                && !flag.contains('=')
                && cmd
                    .as_ref()
                    .is_some_and(|c| c.get_arguments().any(|arg| arg.get_long() == Some(name) && boolean(arg)));
            if is_bool {
                return Err(format!(
                    "-{name} {s}: give booleans as -{name}={s}; vegeta reads this line as -{name}=true and ignores \
                     every flag after '{s}'"
                ));
            }
        }
        if single {
            let name = s[1..].split('=').next().unwrap_or_default();
            let known = cmd.as_ref().is_some_and(|c| c.get_arguments().any(|arg| arg.get_long() == Some(name)));
            if known {
                out.push(format!("-{s}").into());
                continue;
            }
        }
        out.push(a);
    }
    Ok(out)
}
