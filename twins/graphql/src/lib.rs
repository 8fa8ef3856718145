//! The GraphQL engine shared by pome's GraphQL twins (Linear, GitHub): a vendor's SDL compiled
//! at build time into static tables ([`build`], [`tables`]), documents parsed and validated by
//! apollo-compiler against the part of the schema they can reach and kept prepared ([`doc`]),
//! their depth and points counted once per document ([`cost`]), and an executor that writes
//! answers straight into JSON over the twin's resolvers ([`exec`]), with a memo of objects
//! rendered by earlier requests of the same document ([`memo`]).
//!
//! A twin supplies its schema (its `build.rs` calls [`build::tables`] and the crate
//! `include!`s the result, which defines a `static TABLES: Tables`), its root object and its
//! resolvers (implementations of [`exec::Resolve`]), and the error shapes of its vendor.

pub mod build;
pub mod cost;
pub mod doc;
pub mod exec;
pub mod json;
pub mod limits;
pub mod memo;
pub mod request;
pub mod sdl;
pub mod tables;

pub use apollo_compiler;
pub use doc::{Doc, DocResult, Prepared};
pub use exec::{Info, Meta, Out, Planned, Resolve};
pub use tables::{FieldRow, Kind, Tables, TypeRow};
