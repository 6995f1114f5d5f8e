//! The results files a command reads: opened (stdin when none), each once, fed to consumers with
//! their damage warnings, and the shard problems that make them not one run.

use std::fs::File;
use std::io::{BufReader, Read};

use results::{Consumer, Reader};

use crate::bad;

/// An input named for messages.
pub struct Input {
    pub name: String,
    pub reader: Box<dyn Read + Send>,
}

/// Opens `files` (stdin when empty or `-`).
pub fn open_inputs(files: &[String]) -> anyhow::Result<Vec<Input>> {
    if files.is_empty() {
        return Ok(vec![Input { name: "stdin".into(), reader: Box::new(std::io::stdin()) }]);
    }
    once_each(files)?;
    files
        .iter()
        .map(|f| {
            if f == "-" {
                return Ok(Input { name: "stdin".into(), reader: Box::new(std::io::stdin()) });
            }
            let file = File::open(f).map_err(|e| bad(format!("{f}: {e}")))?;
            Ok(Input { name: f.clone(), reader: Box::new(BufReader::with_capacity(1 << 16, file)) })
        })
        .collect()
}

/// Refuses a file given twice (by any path to it): its requests would count twice.
fn once_each(files: &[String]) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mut seen: Vec<((u64, u64), &str)> = Vec::new();
    for f in files.iter().filter(|f| *f != "-") {
        let Ok(meta) = std::fs::metadata(f) else { continue };
        let id = (meta.dev(), meta.ino());
        if let Some((_, first)) = seen.iter().find(|(s, _)| *s == id) {
            return Err(bad(format!("{f}: the same file as {first}: given twice, its requests would count twice")));
        }
        seen.push((id, f));
    }
    Ok(())
}

/// A results error for the user: a closed output (`| head -1`) ends quietly, as a broken pipe
/// does; anything else is bad input.
pub fn results_error(e: results::Error) -> anyhow::Error {
    if e.kind == results::ErrorKind::Closed {
        anyhow::Error::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
    } else {
        bad(e.to_string())
    }
}

/// Feeds every input, in order, into `consumer`, printing damage warnings to stderr. Each
/// input's name is handed to `each` first (charts name unnamed runs after their file). A lab's
/// step file holds its warm-up before the step: left out, as the lab counted it, and said,
/// unless `with_warmup`.
pub fn feed_all<C: Consumer + ?Sized>(
    inputs: Vec<Input>,
    consumer: &mut C,
    mut each: impl FnMut(&mut C, &str),
    with_warmup: bool,
) -> anyhow::Result<()> {
    let mut counted = results::WithoutWarmup::new(consumer);
    for input in inputs {
        each(&mut *counted.inner, &input.name);
        let mut reader = Reader::new(input.reader, input.name);
        if with_warmup {
            results::feed(&mut reader, &mut *counted.inner).map_err(results_error)?;
        } else {
            results::feed(&mut reader, &mut counted).map_err(results_error)?;
        }
        for w in reader.warnings() {
            eprintln!("loadlab: warning: {w}");
        }
    }
    if counted.left_out > 0 {
        eprintln!(
            "loadlab: left out the warm-up the step files name ({} requests in the first {}), as the lab counted \
             them; --with-warmup keeps them",
            counted.left_out,
            results::duration::span(std::time::Duration::from_micros(counted.longest_us))
        );
    }
    Ok(())
}

/// A shard read twice (a copy of its file) counted its requests twice: refused before any
/// report of it is written.
pub fn refuse_twice(problems: &[String]) -> anyhow::Result<()> {
    match problems.iter().find(|p| p.contains(results::GIVEN_TWICE)) {
        Some(twice) => Err(bad(format!("shards: {twice}: its requests would count twice; give each shard once"))),
        None => Ok(()),
    }
}

/// Shard files that do not make one whole run: each fault on stderr, and exit 4 (the report
/// covers what it read, which is not the run).
pub fn shard_problems(problems: &[String]) -> anyhow::Result<()> {
    for p in problems {
        eprintln!("loadlab: shards: {p}");
    }
    crate::exit::shards(problems.len())
}
