//! The slack twin (being written).
