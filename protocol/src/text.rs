//! Splitting text at an ASCII separator, a byte at a time. `str`'s own searches for a `char`
//! (`split`, `split_once`, `rsplit_once`, `contains`) go through core's `memchr`/`memrchr`,
//! ~0.8 KB of the browser build for a few short ids and formats; these give the same
//! results for an ASCII separator, which never sits inside a multi-byte character.

/// `text` split at the first `separator`, as `split_once(separator as char)` splits it.
pub fn split_once(text: &str, separator: u8) -> Option<(&str, &str)> {
    let at = text.bytes().position(|b| b == separator)?;
    parts(text, at)
}

/// `text` split at the last `separator`, as `rsplit_once(separator as char)` splits it.
pub fn split_last(text: &str, separator: u8) -> Option<(&str, &str)> {
    let at = text.bytes().rposition(|b| b == separator)?;
    parts(text, at)
}

/// Whether `text` contains `separator`.
pub fn contains(text: &str, separator: u8) -> bool {
    text.bytes().any(|b| b == separator)
}

/// Whether every piece of `text` between `separator`s (empty ones included, as
/// `split(separator as char)` yields them) satisfies `piece`.
pub fn all_pieces(text: &str, separator: u8, piece: fn(&str) -> bool) -> bool {
    let mut rest = text;
    while let Some((head, tail)) = split_once(rest, separator) {
        if !piece(head) {
            return false;
        }
        rest = tail;
    }
    piece(rest)
}

/// The text before and after the byte at `at`. `get`, not a range index: `at` is an ASCII
/// byte's position, so both are char boundaries, and an index would link core's slicing
/// panic into the browser build.
fn parts(text: &str, at: usize) -> Option<(&str, &str)> {
    Some((text.get(..at)?, text.get(at + 1..)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXTS: [&str; 14] = [
        "",
        ".",
        "..",
        "a",
        "a.b",
        "a.b.c",
        ".a",
        "a.",
        "é.ü",
        "日本.語.x",
        "a.é",
        "a..b",
        "no dots",
        "x_y.z_",
    ];

    #[test]
    fn each_search_finds_what_strs_own_finds() {
        for text in TEXTS {
            for separator in [b'.', b'_', b'@'] {
                let c = separator as char;
                assert_eq!(split_once(text, separator), text.split_once(c), "{text:?}");
                assert_eq!(split_last(text, separator), text.rsplit_once(c), "{text:?}");
                assert_eq!(contains(text, separator), text.contains(c), "{text:?}");
                for piece in [str::is_empty as fn(&str) -> bool, |p: &str| p.len() < 2] {
                    assert_eq!(
                        all_pieces(text, separator, piece),
                        text.split(c).all(piece),
                        "{text:?}"
                    );
                }
            }
        }
    }
}
