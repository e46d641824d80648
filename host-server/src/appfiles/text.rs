//! Reading a configuration file's text, and saying where in it a problem is.

use std::path::{Path, PathBuf};

/// Largest prompt or routes file read, in bytes.
pub const MAX_TEXT_FILE_BYTES: u64 = 256 * 1024;

/// Why a file could not be used; the message names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct FileError {
    pub path: PathBuf,
    pub message: String,
}

impl FileError {
    pub(crate) fn new(path: &Path, message: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            message: message.into(),
        }
    }

    /// A parse error at a 1-based line and column.
    pub(crate) fn at(path: &Path, line: usize, column: usize, reason: &str) -> Self {
        Self::new(path, format!("line {line}, column {column}: {reason}"))
    }
}

/// The 1-based line and column of a byte offset.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// A serde_json error as `line L, column C: reason` (its own text without the position).
pub(crate) fn json_error(path: &Path, e: &serde_json::Error) -> FileError {
    let text = e.to_string();
    let reason = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(reason, _)| reason);
    FileError::at(path, e.line(), e.column(), reason)
}

/// Reads a UTF-8 text file of bounded size.
pub(crate) fn read_text(path: &Path) -> Result<String, FileError> {
    let meta = std::fs::metadata(path).map_err(|e| FileError::new(path, e.to_string()))?;
    if meta.len() > MAX_TEXT_FILE_BYTES {
        return Err(FileError::new(
            path,
            format!("the file is larger than {MAX_TEXT_FILE_BYTES} bytes"),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| FileError::new(path, e.to_string()))?;
    String::from_utf8(bytes).map_err(|e| {
        let (line, column) = line_column(
            &String::from_utf8_lossy(e.as_bytes()),
            e.utf8_error().valid_up_to(),
        );
        FileError::at(path, line, column, "the file is not UTF-8 text")
    })
}
