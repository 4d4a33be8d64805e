//! The KnowHub daemon as a library: boot it on a socket, serve until told to stop.
//!
//! `main.rs` is a thin wrapper that reads the environment, installs signal handlers and calls
//! [`Daemon::boot`] and [`Daemon::run`]; tests boot the daemon in-process on a temp socket.

pub mod activation;
pub mod app;
pub mod config;
pub mod daemon;
pub mod extraction;
pub mod hooks;
pub mod hub;
pub mod identity;
pub mod log;
mod rpc;
pub mod server;
pub mod services;
pub mod supervisor;
pub mod trust;
pub mod writes;

pub use config::Config;
pub use daemon::Daemon;
pub use kb_engine::Engine;
