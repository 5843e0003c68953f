//! The recourse executor (in progress).
