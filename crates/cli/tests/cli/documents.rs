//! The project's documents, held to what they describe: the changelog's
//! shape, the benchmark page's parts, CONTRIBUTING's list of what CI runs
//! against `.ci/run`, `docs/architecture.md`'s crates against `cargo
//! metadata`, and every MCP client configuration shown starting `recourse`
//! by its full path. Each check names the file, the line and what to change. Run
//! them with `cargo test -p recourse-cli --test cli documents::`.

mod architecture;
mod benchmarks;
mod changelog;
mod client_configs;
mod contributing;

/// The repository's root.
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
