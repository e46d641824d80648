//! The surface version: a value type that the registry bumps and the envelope, events,
//! snapshots and meta mode carry. A leaf: it imports nothing of this crate.

/// `surfaceVersion`: a counter every structural change bumps, compared for equality only.
/// The wire (catalog, meta tools, invocation results) carries its decimal text, as
/// agent-surface has it; JS gets the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SurfaceVersion(pub u64);

impl SurfaceVersion {
    /// What a client claims the version is (meta mode's `surfaceVersion` text). Only the text a
    /// version is written as names it (no sign, no leading zero); any other text is a claim no
    /// surface ever matches.
    pub fn claimed(text: &str) -> Self {
        // Read digit by digit, without `str::parse`: core's integer parser is not otherwise in
        // the browser build.
        let written = text == "0" || !(text.is_empty() || text.starts_with('0'));
        let mut version: u64 = 0;
        for byte in text.bytes() {
            let digit = byte.wrapping_sub(b'0');
            let next = version
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(digit)));
            match next {
                Some(next) if digit < 10 && written => version = next,
                _ => return Self(u64::MAX),
            }
        }
        if written {
            Self(version)
        } else {
            Self(u64::MAX)
        }
    }

    /// The decimal text the wire carries.
    pub fn to_wire(self) -> String {
        self.0.to_string()
    }
}

impl From<SurfaceVersion> for dpas_protocol::json::Value {
    fn from(version: SurfaceVersion) -> Self {
        Self::String(version.to_wire())
    }
}

impl serde::Serialize for SurfaceVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_wire())
    }
}
