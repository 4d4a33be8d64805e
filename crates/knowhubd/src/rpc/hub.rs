//! `hub.sync`: a sync round with the team's hub now, waited for; `hub.hidden` and
//! `hub.unhide`: the teammates' experiences deleted here, kept hidden from later syncs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonrpsee::RpcModule;
use jsonrpsee::types::ErrorObjectOwned;
use kb_proto::wire;
use kb_proto::{ErrorCode, method};

use super::{invalid, to_rpc_error};
use crate::app::App;
use crate::supervisor::State;

/// The longest `hub.sync` waits for its round.
const SYNC_WAIT: Duration = Duration::from_secs(60);

fn unavailable(message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(ErrorCode::Unavailable.code(), message.into(), None::<()>)
}

pub(super) fn register(module: &mut RpcModule<Arc<App>>) {
    module
        .register_blocking_method(method::HUB_SYNC, |_params, app, _| {
            let engine = &app.engine;
            let (pushed_before, pulled_before) = app.hub.totals();
            if app.hub.config.url.is_none() {
                return Err(invalid("hub", "no hub is configured: set [hub] url and team in the daemon's config.toml"));
            }
            let round = app.hub.request();
            // Waited for in slices: a sync service that crashed meanwhile is said at once, not
            // after the whole wait.
            let deadline = Instant::now() + SYNC_WAIT;
            loop {
                if app.hub.wait_for(round, Duration::from_millis(200)) {
                    break;
                }
                if app.is_stopping() {
                    return Err(unavailable("knowhubd is stopping; the sync goes on at its next start"));
                }
                if let Some(crashed) = app.health.reports().into_iter().find(|report| report.name == "hub" && report.state == State::Failed) {
                    let why = crashed.reason.unwrap_or_default();
                    return Err(unavailable(format!("the hub sync service {why}; it restarts by itself (see `kbctl status`)")));
                }
                if Instant::now() >= deadline {
                    return Err(unavailable(
                        "the hub sync did not finish within 60 s; it goes on in the background (see `kbctl hub status`)",
                    ));
                }
            }
            let hub = crate::hub::status(engine, &app.hub).map_err(|error| to_rpc_error(engine, error))?;
            let (pushed, pulled) = app.hub.totals();
            Ok::<_, ErrorObjectOwned>(wire::HubSyncResult {
                pushed: pushed - pushed_before,
                pulled: pulled - pulled_before,
                hub,
            })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::HUB_HIDDEN, |_params, app, _| {
            crate::hub::hidden(&app.engine).map_err(|error| to_rpc_error(&app.engine, error))
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::HUB_UNHIDE, |params, app, _| {
            let params: wire::HubUnhideParams = params.parse()?;
            let unhidden = app
                .engine
                .lock_writer()
                .hub_unhide(&params.author, &params.id)
                .map_err(|error| to_rpc_error(&app.engine, error.into()))?;
            if unhidden {
                app.hub.request();
            }
            Ok::<_, ErrorObjectOwned>(wire::HubUnhideResult { unhidden })
        })
        .expect("method names are unique");
}
