//! How a stack in a sample or an allocation record was walked: the
//! 8-bit field both records carry.

/// How a sample's stack was walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Walk {
    /// Unwind tables (`.eh_frame`).
    UnwindTables,
    /// Frame pointers.
    FramePointers,
    /// Only the interrupted instruction pointer.
    PcOnly,
    /// Not walked: the registers and a copy of the stack follow, for the
    /// reader to unwind ([`RawSample`](super::RawSample)).
    RawStack,
}

impl Walk {
    /// The 8-bit value of the field.
    pub const fn value(self) -> u8 {
        match self {
            Self::UnwindTables => 1,
            Self::FramePointers => 2,
            Self::PcOnly => 3,
            Self::RawStack => 4,
        }
    }

    /// The walk for a field value.
    pub const fn from_value(value: u8) -> Option<Self> {
        match value {
            1 => Some(Self::UnwindTables),
            2 => Some(Self::FramePointers),
            3 => Some(Self::PcOnly),
            4 => Some(Self::RawStack),
            _ => None,
        }
    }
}
