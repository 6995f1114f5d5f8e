//! Output files written whole or not at all (reports, profiles, pages).

use std::path::Path;

/// Writes `bytes` to `path` whole or not at all: into a temporary file renamed over `path`, so
/// a full disk leaves no truncated file that looks complete. Errors name the file.
pub fn put(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let named = |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let tmp = path.with_extension(format!(
        "{}.partial",
        path.extension().map_or(String::new(), |e| e.to_string_lossy().into_owned())
    ));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(named)
}
