//! The step protocol's versions: v2 (current) and v1 (served beside it).

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProtocolVersion {
    V1,
    V2,
}

impl ProtocolVersion {
    pub const CURRENT: Self = Self::V2;

    pub const fn as_u8(self) -> u8 {
        match self {
            Self::V1 => 1,
            Self::V2 => 2,
        }
    }
}
