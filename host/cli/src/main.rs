//! The `pome` binary: parse, set up logging, hand over to `cli::run`.

use clap::Parser as _;

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = pome::cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("POME_LOG").unwrap_or_else(|_| "pome=info,warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("starting the async runtime");
    let code = runtime.block_on(pome::cli::run(cli));
    std::process::exit(code);
}
