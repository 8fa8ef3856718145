//! The end-to-end suite: the real server on a real socket, real twin components. Each file
//! is a module of this one test binary (linking all of pome once instead of once per file);
//! `cargo test --release -p pome-e2e -- containment::` runs one file's tests.

mod clients;
mod containment;
mod deliveries;
mod durability;
mod forks;
mod fuzz;
mod grading;
mod hostile;
mod hosts;
mod isolation;
mod lifecycle;
mod openapi;
mod platform;
mod rewind;
mod secrets;
mod tape;
mod tasks;
mod twin_input;
