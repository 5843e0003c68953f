//! Reference tools (being built).
