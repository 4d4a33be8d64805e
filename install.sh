#!/usr/bin/env bash
# Installs KnowHub for the current user and starts the daemon:
#   builds the release binaries, installs knowhubd and kbctl into $PREFIX/bin (default
#   ~/.local/bin), writes the commented default config if there is none, starts knowhubd,
#   and ends with `kbctl status`.
set -euo pipefail
cd "$(dirname "$0")"

PREFIX="${PREFIX:-$HOME/.local}"
BIN_DIR="$PREFIX/bin"

echo "==> building release binaries"
cargo build --release --locked --bins

echo "==> installing knowhubd and kbctl into $BIN_DIR"
mkdir -p "$BIN_DIR"
install -m 0755 target/release/knowhubd target/release/kbctl "$BIN_DIR/"

config_path() {
  if [ -n "${KNOWHUB_HOME:-}" ]; then echo "$KNOWHUB_HOME/config.toml"; else echo "${XDG_CONFIG_HOME:-$HOME/.config}/knowhub/config.toml"; fi
}
CONFIG="$(config_path)"
if [ ! -f "$CONFIG" ]; then
  echo "==> writing the default config to $CONFIG"
  mkdir -p "$(dirname "$CONFIG")"
  "$BIN_DIR/knowhubd" --print-config > "$CONFIG"
fi

echo "==> starting knowhubd"
if "$BIN_DIR/kbctl" status >/dev/null 2>&1; then
  echo "knowhubd is already running; restarting it on the new binary"
  pid="$("$BIN_DIR/kbctl" status --json | sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' | head -n1)"
  if [ -n "$pid" ]; then kill "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done; fi
fi
LOG_DIR="${XDG_STATE_HOME:-$HOME/.local/state}/knowhub"
mkdir -p "$LOG_DIR"
nohup "$BIN_DIR/knowhubd" >>"$LOG_DIR/knowhubd.log" 2>&1 </dev/null &
for _ in $(seq 1 100); do
  if "$BIN_DIR/kbctl" status >/dev/null 2>&1; then break; fi
  sleep 0.1
done

case ":$PATH:" in *":$BIN_DIR:"*) ;; *) echo "note: add $BIN_DIR to your PATH";; esac
"$BIN_DIR/kbctl" status
