//! Text helpers shared by the crate's modules. A leaf: it imports nothing of this crate.

/// The number of `char`s in `text`: its bytes that do not continue a UTF-8 sequence. A loop,
/// not `chars().count()`, whose word-at-a-time counter is 0.8 KB of the wasm.
pub(crate) fn char_count(text: &str) -> usize {
    let mut count = 0;
    for byte in text.bytes() {
        if byte & 0xc0 != 0x80 {
            count += 1;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn char_count_counts_what_chars_counts() {
        for text in [
            "",
            "abc",
            "é",
            "naïve café",
            "😀x😀",
            "\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}",
        ] {
            assert_eq!(char_count(text), text.chars().count(), "{text:?}");
        }
    }
}
