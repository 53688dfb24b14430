#!/usr/bin/env bash
# Bring your own model, end to end: define it in PyTorch, plan it, train it on a local
# emulated cluster, export it and load it back in PyTorch.
#
#   examples/torchscript/run.sh [WORK_DIR]      (after packaging/bootstrap build)
#
# STAGECRAFT_BUILD_DIR names the build folder (default: build/), STAGECRAFT_EXAMPLE_STEPS
# the training steps (default 10). Everything is written to WORK_DIR (default: a new
# temporary folder).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${STAGECRAFT_BUILD_DIR:-$root/build}
cli=$build/app/cli/stagecraft-cli
work=${1:-$(mktemp -d -t stagecraft-example-XXXXXX)}
steps=${STAGECRAFT_EXAMPLE_STEPS:-10}
# Debian's python3 has python3-torch; another python3 first on the PATH may not.
python=/usr/bin/python3
[ -x "$python" ] || python=python3
mkdir -p "$work"
cd "$work"

echo "== 1. Define the model in PyTorch and save it as TorchScript"
"$python" "$here/make_model.py" tiny_cnn.pt

echo "== 2. Plan it on the shipped edge cluster (one sample is a 3x32x32 image)"
"$cli" plan --model tiny_cnn.pt --input-shape 3,32,32 --cluster jetson-edge --batch 32

echo "== 3. Train it on a local emulated cluster, then export the trained model"
"$cli" run --model tiny_cnn.pt --input-shape 3,32,32 --cluster jetson-edge --local --batch 32 \
  --steps "$steps" --export trained.pt

echo "== 4. Load the trained model back in PyTorch"
"$python" "$here/load_trained.py" tiny_cnn.pt trained.pt
