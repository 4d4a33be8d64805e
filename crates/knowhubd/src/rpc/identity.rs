//! `daemon.prove`: the daemon proves it can read the key only the user can read
//! (`kb_proto::identity`). It answers from memory: no store, no lock, no wait.

use std::sync::Arc;

use jsonrpsee::RpcModule;
use jsonrpsee::types::{ErrorObjectOwned, Params};
use kb_proto::identity::{NONCE_BYTES, from_hex, to_hex};
use kb_proto::{ErrorCode, method, wire};

use super::{RpcResult, invalid, parse};
use crate::app::App;

pub(super) fn register(module: &mut RpcModule<Arc<App>>) {
    module
        .register_method(method::DAEMON_PROVE, |params, app, _| prove(&params, app))
        .expect("method names are unique");
}

fn prove(params: &Params<'_>, app: &App) -> RpcResult<wire::ProveResult> {
    let params: wire::ProveParams = parse(params)?;
    let nonce = from_hex(&params.nonce).filter(|nonce| nonce.len() == NONCE_BYTES).ok_or_else(|| {
        invalid(
            "nonce",
            format!(
                "must be {NONCE_BYTES} random bytes as {} hex digits, got {} characters",
                NONCE_BYTES * 2,
                params.nonce.chars().count()
            ),
        )
    })?;
    let proof = app
        .identity
        .prove(&nonce)
        .map_err(|reason| ErrorObjectOwned::owned(ErrorCode::Unavailable.code(), reason, None::<()>))?;
    Ok(wire::ProveResult { proof: to_hex(&proof) })
}
