#!/usr/bin/env bash
# Installs KnowHub for the current user and starts it:
#   builds the release binaries, installs knowhubd and kbctl into $PREFIX/bin (default
#   ~/.local/bin), obtains ONNX Runtime where pip can, writes the commented default config if
#   there is none, installs the user service (`kbctl service install`: systemd or launchd
#   start the daemon on the first connection; without either, the daemon is started in the
#   background), and ends with `kbctl status`.
set -euo pipefail
cd "$(dirname "$0")"

PREFIX="${PREFIX:-$HOME/.local}"
BIN_DIR="$PREFIX/bin"
ORT_VERSION="1.31.1"

if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo is not installed; get a Rust toolchain from https://rustup.rs and run this again" >&2
  exit 1
fi

echo "==> building release binaries"
cargo build --release --locked -p knowhubd -p kbctl

echo "==> installing knowhubd and kbctl into $BIN_DIR"
mkdir -p "$BIN_DIR"
install -m 0755 target/release/knowhubd target/release/kbctl "$BIN_DIR/"

# Embeddings use ONNX Runtime, loaded at run time from PyPI's onnxruntime wheel.
# Optional: without it the daemon searches by BM25 alone, so nothing here may fail the install.
echo "==> obtaining ONNX Runtime $ORT_VERSION"
if command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
  if python3 -m pip install --user --quiet --disable-pip-version-check "onnxruntime==$ORT_VERSION"; then
    ort_dir="$(python3 -c 'import os, onnxruntime; print(os.path.join(os.path.dirname(onnxruntime.__file__), "capi"))' 2>/dev/null || true)"
    ort_lib=""
    for candidate in "$ort_dir/libonnxruntime.so.$ORT_VERSION" "$ort_dir/libonnxruntime.$ORT_VERSION.dylib"; do
      if [ -f "$candidate" ]; then ort_lib="$candidate"; fi
    done
    if [ -n "$ort_lib" ]; then
      echo "ONNX Runtime: $ort_lib"
    else
      echo "note: onnxruntime $ORT_VERSION is installed but its library was not found in ${ort_dir:-its package}"
    fi
  else
    echo "note: pip could not install onnxruntime==$ORT_VERSION; KnowHub searches by BM25 alone"
  fi
else
  echo "note: no python3 with pip; skipping ONNX Runtime (KnowHub searches by BM25 alone)"
fi

# The same place knowhubd reads its config from (the `directories` crate's config dir).
config_path() {
  if [ -n "${KNOWHUB_HOME:-}" ]; then
    echo "$KNOWHUB_HOME/config.toml"
  elif [ "$(uname -s)" = Darwin ]; then
    echo "$HOME/Library/Application Support/knowhub/config.toml"
  else
    echo "${XDG_CONFIG_HOME:-$HOME/.config}/knowhub/config.toml"
  fi
}
CONFIG="$(config_path)"
if [ ! -f "$CONFIG" ]; then
  echo "==> writing the default config to $CONFIG"
  mkdir -p "$(dirname "$CONFIG")"
  "$BIN_DIR/knowhubd" --print-config > "$CONFIG"
  if [ -n "${ort_lib:-}" ]; then
    # The service does not see this shell's environment: the config names the library.
    sed "s|^# onnxruntime = .*|onnxruntime = \"$ort_lib\"|" "$CONFIG" > "$CONFIG.tmp" && mv "$CONFIG.tmp" "$CONFIG"
  fi
elif [ -n "${ort_lib:-}" ] && ! grep -q '^onnxruntime' "$CONFIG"; then
  echo "note: to use embeddings, set onnxruntime = \"$ort_lib\" under [embedding] in $CONFIG"
fi

echo "==> installing the service"
"$BIN_DIR/kbctl" service install

case ":$PATH:" in *":$BIN_DIR:"*) ;; *) echo "note: add $BIN_DIR to your PATH";; esac
echo "==> kbctl status"
"$BIN_DIR/kbctl" status
