//! The share coordinator: filled in by its own change.
