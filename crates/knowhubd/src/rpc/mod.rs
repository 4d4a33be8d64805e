//! The protocol layer: every JSON-RPC method, bound to the [`App`]: wire parameters are parsed
//! (kb-proto), turned into domain types, handed to the engine or a service, and the results
//! mapped back to wire types and error codes. One module per area: `store` (experiences,
//! search, review), `hooks`, `extraction`, `hub`, `status`, `identity` (`daemon.prove`).

mod extraction;
mod hooks;
mod hub;
mod identity;
mod status;
mod store;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use jsonrpsee::RpcModule;
use jsonrpsee::types::{ErrorObjectOwned, Params};
use kb_proto::ErrorCode;
use kb_proto::wire::{self, ParamError};

use crate::app::App;
use kb_engine::engine::{Engine, EngineError};
use kb_engine::stats::Cause;

/// The most experiences one `kb.list` or `kb.export` page returns.
const MAX_PAGE: usize = 1_000;

type RpcResult<T> = Result<T, ErrorObjectOwned>;

/// Every method of the protocol, bound to the app.
pub fn module(app: Arc<App>, socket: PathBuf) -> RpcModule<Arc<App>> {
    let mut module = RpcModule::new(app);
    status::register(&mut module, socket);
    store::register(&mut module);
    hooks::register(&mut module);
    extraction::register(&mut module);
    hub::register(&mut module);
    identity::register(&mut module);
    module
}

/// Registers a method that writes: its work (parsing the parameters included) runs on the write
/// pool, below the searches (`crate::writes`), instead of tokio's blocking pool.
fn register_write<T, F>(module: &mut RpcModule<Arc<App>>, name: &'static str, callback: F)
where
    T: serde::Serialize + Clone + Send + 'static,
    F: Fn(&Params<'static>, &App) -> RpcResult<T> + Clone + Send + Sync + 'static,
{
    module
        .register_async_method(name, move |params, app, _| {
            let callback = callback.clone();
            let answer = app.writes.spawn({
                let app = Arc::clone(&app);
                move || callback(&params, &app)
            });
            async move {
                answer.await.unwrap_or_else(|error| {
                    let message = format!("internal error: {name} failed: {error}");
                    tracing::error!("{message}");
                    app.engine.last_error.set(Cause::Request, message.clone());
                    Err(ErrorObjectOwned::owned(ErrorCode::Internal.code(), message, None::<()>))
                })
            }
        })
        .expect("method names are unique");
}

fn parse<T: serde::de::DeserializeOwned>(params: &Params<'_>) -> RpcResult<T> {
    wire::parse_params(params.as_str()).map_err(param_error)
}

fn param_error(error: ParamError) -> ErrorObjectOwned {
    let message = error.to_string();
    ErrorObjectOwned::owned(ErrorCode::InvalidParams.code(), message, Some(serde_json::json!({"field": error.field})))
}

fn invalid(field: &str, message: impl Into<String>) -> ErrorObjectOwned {
    param_error(ParamError { field: field.to_owned(), message: message.into() })
}

/// Maps an engine error to a JSON-RPC error; internal errors are also kept for `status`.
fn to_rpc_error(engine: &Engine, error: EngineError) -> ErrorObjectOwned {
    match error {
        EngineError::Invalid { field, message } => invalid(&field, message),
        EngineError::NotFound(message) => ErrorObjectOwned::owned(ErrorCode::NotFound.code(), message, None::<()>),
        EngineError::Unavailable(message) => {
            ErrorObjectOwned::owned(ErrorCode::Unavailable.code(), message, None::<()>)
        }
        EngineError::Refused { id, message } => {
            ErrorObjectOwned::owned(ErrorCode::Refused.code(), message, Some(serde_json::json!({"experience_id": id})))
        }
        EngineError::Internal(error) => {
            let message = format!("internal error: {error:#}");
            tracing::error!("{message}");
            engine.last_error.set(Cause::Request, message.clone());
            ErrorObjectOwned::owned(ErrorCode::Internal.code(), message, None::<()>)
        }
    }
}

fn experience_id(field: &str, text: &str) -> RpcResult<String> {
    kb_core::ExperienceId::parse(text)
        .map(|id| id.to_string())
        .ok_or_else(|| invalid(field, format!("{text:?} is not an experience id")))
}

fn page_limit(limit: Option<i64>, default: usize) -> RpcResult<usize> {
    match limit {
        None => Ok(default),
        Some(limit) if limit < 1 => Err(invalid("limit", format!("must be at least 1, got {limit}"))),
        Some(limit) => Ok((limit as usize).min(MAX_PAGE)),
    }
}

fn rfc3339(unix_ms: i64) -> String {
    let time = UNIX_EPOCH + Duration::from_millis(unix_ms.max(0) as u64);
    humantime::format_rfc3339_millis(time).to_string()
}

fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1_000_000.0).round() / 1000.0
}
