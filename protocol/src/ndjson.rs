//! NDJSON framing: an encoder, and an incremental decoder that accepts any chunk
//! boundaries (UTF-8 split across chunks, `\r\n`, blank lines). A malformed line becomes
//! the `PROTOCOL_DECODE_ERROR` error frame `Malformed frame received.` and decoding goes
//! on; a trailing fragment without a newline at end of stream is reported, never parsed.

use crate::error::HostErrorCode;
use crate::frame::{ErrorBody, Frame};

/// The message of the error frame a malformed line becomes (J4).
pub const MALFORMED_FRAME_MESSAGE: &str = "Malformed frame received.";

/// Appends one frame and its newline to `out`.
pub fn encode_frame_into(frame: &Frame, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, frame).expect("frames always serialise");
    out.push(b'\n');
}

/// One frame as an NDJSON line.
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
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        let mut pos = self.scanned;
        while let Some(offset) = self.buf[pos..].iter().position(|&b| b == b'\n') {
            let end = pos + offset;
            if let Some(frame) = decode_line(&self.buf[start..end]) {
                out.push(frame);
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

/// Decodes one line: trimmed; empty lines yield nothing; bad UTF-8 or JSON is malformed.
fn decode_line(line: &[u8]) -> Option<Frame> {
    let line = line.trim_ascii();
    if line.is_empty() {
        return None;
    }
    Some(serde_json::from_slice::<Frame>(line).unwrap_or_else(|_| malformed_frame()))
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
