//! A share-partition on its leader: filled in by its own change.
