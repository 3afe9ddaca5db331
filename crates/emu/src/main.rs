//! `ccarena-bottleneck`: the user-space bottleneck of the Linux backend.
//! Started by `python/ccarena/linux` inside the router namespace; see
//! `--help` (`ccarena_emu::cli`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    ExitCode::from(ccarena_emu::cli::main(&args))
}
