//! The `theia` command as users run it (these tests run the binary, so they need the `cli`
//! feature): its commands and exit codes, hostile input, bands and merges, output faults,
//! the foreign pixel stages (PICA200, R500), traces, and the viewer over HTTP and in a real
//! browser. One test binary, one module per area: `cargo test --release --test cli merge::`
//! runs one of them.

#[path = "../common/mod.rs"]
mod common;
#[path = "../model/mod.rs"]
mod model;

mod browser;
mod commands;
mod hostile_input;
mod merge;
mod output_faults;
mod pica200;
mod r500;
mod stray_hits;
mod trace;
mod view;
