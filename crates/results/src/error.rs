use std::fmt;

/// What went wrong while reading or writing results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input does not start like a results file.
    NotResults,
    /// The input is another tool's results: how to bring them in.
    Foreign(&'static str),
    /// The input is a results file of a version this build cannot read.
    Version(u8),
    /// A header that is not valid (bad JSON, bad checksum).
    BadHeader(String),
    /// Reading or writing failed.
    Io(String),
    /// Where the records went was closed: a pipe whose reader stopped (`| head -1`).
    Closed,
    /// A record in a foreign format (vegeta JSON or CSV) that cannot be parsed.
    BadLine { line: u64, reason: String },
}

/// An error with the name of the input it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub source_name: String,
    pub kind: ErrorKind,
}

impl Error {
    pub fn new(source_name: impl Into<String>, kind: ErrorKind) -> Self {
        Error { source_name: source_name.into(), kind }
    }

    /// A write failure: `Closed` for a broken pipe, else `Io`.
    pub fn writing(source_name: impl Into<String>, e: &std::io::Error) -> Self {
        let kind =
            if e.kind() == std::io::ErrorKind::BrokenPipe { ErrorKind::Closed } else { ErrorKind::Io(e.to_string()) };
        Error::new(source_name, kind)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = &self.source_name;
        match &self.kind {
            ErrorKind::NotResults => write!(f, "{name}: not a loadlab results file (bad magic at byte 0)"),
            ErrorKind::Foreign(how) => write!(f, "{name}: not a loadlab results file but {how}"),
            ErrorKind::Version(v) => write!(f, "{name}: results format version {v} is not supported"),
            ErrorKind::BadHeader(why) => write!(f, "{name}: bad run header: {why}"),
            ErrorKind::Io(why) => write!(f, "{name}: {why}"),
            ErrorKind::Closed => write!(f, "{name}: the output was closed"),
            ErrorKind::BadLine { line, reason } => write!(f, "{name}:{line}: {reason}"),
        }
    }
}

impl std::error::Error for Error {}
