//! Decoder (in progress).
