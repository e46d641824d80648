//! NDJSON framing: an encoder, and an incremental decoder that accepts any chunk
//! boundaries (UTF-8 split across chunks, `\r\n`, blank lines). A malformed line becomes
//! the `PROTOCOL_DECODE_ERROR` error frame `Malformed frame received.` and decoding goes
//! on; a trailing fragment without a newline at end of stream is reported, never parsed.

use crate::error::HostErrorCode;
use crate::frame::{ErrorBody, Frame};

/// The message of the error frame a malformed line becomes (J4).
pub const MALFORMED_FRAME_MESSAGE: &str = "Malformed frame received.";

/// Appends one frame and its newline to `out`. (The server's; the browser build writes no
/// frames.)
#[cfg(any(feature = "serde-json-value", feature = "test-support", test))]
pub fn encode_frame_into(frame: &Frame, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, frame).expect("frames always serialise");
    out.push(b'\n');
}

/// One frame as an NDJSON line.
#[cfg(any(feature = "serde-json-value", feature = "test-support", test))]
pub fn encode_frame(frame: &Frame) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    encode_frame_into(frame, &mut out);
    out
}

/// The error frame a malformed line is reported as.
pub fn malformed_frame() -> Frame {
    Frame::Error {
        error: ErrorBody {
            code: HostErrorCode::ProtocolDecodeError.as_str().to_owned(),
            message: MALFORMED_FRAME_MESSAGE.to_owned(),
        },
    }
}

/// Bytes left over at end of stream with no terminating newline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the stream ended inside a frame ({len} bytes without a newline)")]
pub struct TrailingFragment {
    pub len: usize,
}

/// Incremental decoder. Invariant: `buf[..scanned]` holds no newline.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    scanned: usize,
}

impl FrameDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk and appends every frame completed by it to `out`.
    pub fn push_into(&mut self, chunk: &[u8], out: &mut Vec<Frame>) {
        self.push_lines(chunk, |frame, _| out.push(frame));
    }

    /// Feeds a chunk and hands every frame it completed to `each`, with the line's text
    /// (trimmed) when the line decoded, `None` for a malformed line (whose frame is then the
    /// J4 error frame). A reader that forwards frames elsewhere can pass the server's own
    /// text on instead of serialising the frame again.
    pub fn push_lines(&mut self, chunk: &[u8], mut each: impl FnMut(Frame, Option<&str>)) {
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        let mut pos = self.scanned;
        while let Some(offset) = self.buf[pos..].iter().position(|&b| b == b'\n') {
            let end = pos + offset;
            let line = self.buf[start..end].trim_ascii();
            if !line.is_empty() {
                match decode_line(line) {
                    Some((frame, text)) => each(frame, Some(text)),
                    None => each(malformed_frame(), None),
                }
            }
            start = end + 1;
            pos = start;
        }
        self.buf.drain(..start);
        self.scanned = self.buf.len();
    }

    /// Feeds a chunk and returns the frames it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Frame> {
        let mut out = Vec::new();
        self.push_into(chunk, &mut out);
        out
    }

    /// Ends the stream: whitespace left over is fine, anything else is reported.
    pub fn finish(self) -> Result<(), TrailingFragment> {
        if self.buf.iter().all(u8::is_ascii_whitespace) {
            Ok(())
        } else {
            Err(TrailingFragment {
                len: self.buf.len(),
            })
        }
    }
}

/// Decodes one trimmed, non-empty line; `None` when it is not UTF-8 JSON of a frame.
fn decode_line(line: &[u8]) -> Option<(Frame, &str)> {
    let text = std::str::from_utf8(line).ok()?;
    let frame = crate::frame::decode_frame(crate::json::parse(line).ok()?)?;
    Some((frame, text))
}

/// Decodes a whole body at once (tests, recorded traces).
pub fn decode_all(body: &[u8]) -> (Vec<Frame>, Result<(), TrailingFragment>) {
    let mut decoder = FrameDecoder::new();
    let frames = decoder.push(body);
    (frames, decoder.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_input_with_split_utf8_crlf_and_blank_lines() {
        let body = "{\"type\":\"text-delta\",\"text\":\"€ — ok\"}\r\n\n  \n{\"type\":\"reasoning-delta\",\"text\":\"x\"}\n";
        let bytes = body.as_bytes();
        for split in 0..bytes.len() {
            let mut d = FrameDecoder::new();
            let mut frames = d.push(&bytes[..split]);
            frames.extend(d.push(&bytes[split..]));
            assert_eq!(frames.len(), 2, "split at {split}");
            assert_eq!(
                frames[0],
                Frame::TextDelta {
                    text: "€ — ok".into()
                }
            );
            assert!(d.finish().is_ok());
        }
    }

    #[test]
    fn malformed_lines_become_error_frames_and_decoding_goes_on() {
        let (frames, end) = decode_all(b"{nope\n\xff\xfe\n{\"type\":\"text-delta\"}\n{\"type\":\"text-delta\",\"text\":\"a\"}\n");
        assert_eq!(frames.len(), 4);
        for f in &frames[..3] {
            assert_eq!(f, &malformed_frame());
        }
        assert_eq!(frames[3], Frame::TextDelta { text: "a".into() });
        assert!(end.is_ok());
    }

    #[test]
    fn push_lines_hands_over_each_line_as_sent_and_none_for_a_malformed_one() {
        let body = b"  {\"type\":\"text-delta\",\"text\":\"a\",\"extra\":1}\r\n[1]\n\n{\"type\":\"future-frame\"}\n";
        for split in 0..body.len() {
            let mut d = FrameDecoder::new();
            let mut seen: Vec<(Frame, Option<String>)> = Vec::new();
            for chunk in [&body[..split], &body[split..]] {
                d.push_lines(chunk, |frame, raw| {
                    seen.push((frame, raw.map(str::to_owned)))
                });
            }
            assert_eq!(seen.len(), 3, "split at {split}");
            assert_eq!(seen[0].0, Frame::TextDelta { text: "a".into() });
            // The line itself, trimmed: unknown keys the frame type drops are still there.
            assert_eq!(
                seen[0].1.as_deref(),
                Some("{\"type\":\"text-delta\",\"text\":\"a\",\"extra\":1}")
            );
            // A JSON value that is not an object is malformed: the J4 frame, no text.
            assert_eq!(seen[1], (malformed_frame(), None));
            assert!(matches!(seen[2].0, Frame::Unknown(_)));
            assert_eq!(seen[2].1.as_deref(), Some("{\"type\":\"future-frame\"}"));
        }
    }

    #[test]
    fn a_trailing_fragment_is_reported_not_parsed() {
        let (frames, end) = decode_all(
            b"{\"type\":\"text-delta\",\"text\":\"a\"}\n{\"type\":\"text-delta\",\"text\":\"b\"}",
        );
        assert_eq!(frames.len(), 1);
        assert_eq!(end, Err(TrailingFragment { len: 32 }));
        assert!(decode_all(b"\n  \r\n").1.is_ok());
    }

    #[test]
    fn encoder_writes_one_line_per_frame() {
        let line = encode_frame(&Frame::TextDelta {
            text: "a\nb".into(),
        });
        assert_eq!(line, b"{\"type\":\"text-delta\",\"text\":\"a\\nb\"}\n");
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
    }
}
