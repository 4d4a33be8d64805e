//! `kbctl`: the KnowHub command line. Health check, search, submit and store administration,
//! all through the daemon's socket.

mod cli;
mod commands;
mod output;
mod service;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, HubAction};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Hub { action: HubAction::Init { url, team, members, password_env } } = &cli.command {
        return match commands::hub::init(url, team, members, password_env, cli.json) {
            Ok(code) => code,
            Err(error) => {
                output::error_line(format!("kbctl: {error:#}"));
                ExitCode::FAILURE
            }
        };
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            output::error_line(format!("kbctl: cannot start: {error}"));
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        Err(error) if output::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            output::error_line(format!("kbctl: {error:#}"));
            ExitCode::FAILURE
        }
    }
}
