//! The github twin (being written).
