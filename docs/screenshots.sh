#!/usr/bin/env bash
# Re-takes the README's screenshots of the console during live training: starts the console
# under Xvfb on the shipped jetson-edge cluster, starts it as local workers (Ctrl+L),
# deploys (F7), trains (F5), and captures the screen once training runs.
#
#   docs/screenshots.sh [LANG] [OUT.png] [replan]   e.g. docs/screenshots.sh zh_CN docs/console-zh_CN.png
#
# STAGECRAFT_SHOT_SIZE sets the screen (default 1600x1000; a laptop's is 1366x768).
#
# With `replan` it then presses Ctrl+R (re-plan now) and captures the proposal dialog too,
# as OUT with -replan before the extension.
#
# Needs a build (packaging/bootstrap build) and xvfb, xdotool, imagemagick.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
lang=${1:-en}
out=${2:-$root/docs/console-$lang.png}
mode=${3:-}
build=${STAGECRAFT_BUILD_DIR:-$root/build}
for tool in xvfb-run xdotool import; do
  command -v "$tool" >/dev/null || { echo "screenshots.sh: needs $tool (apt-get install xvfb xdotool imagemagick)" >&2; exit 2; }
done


run() {
  export XDG_CONFIG_HOME=$config
  "$build/app/gui/stagecraft" --cluster jetson-edge --model "${STAGECRAFT_SHOT_MODEL:-vgg11}" --lang "$lang" &
  local app=$!
  local window=""
  for _ in $(seq 1 60); do
    window=$(xdotool search --pid "$app" --onlyvisible --class stagecraft 2>/dev/null | head -n 1 || true)
    [ -n "$window" ] && break
    sleep 0.5
  done
  [ -n "$window" ] || { echo "screenshots.sh: the console did not open" >&2; kill "$app"; exit 1; }
  xdotool windowfocus --sync "$window"
  xdotool key --window "$window" ctrl+l        # start the local cluster
  sleep "${STAGECRAFT_SHOT_UP:-12}"
  xdotool key --window "$window" F7            # deploy
  sleep "${STAGECRAFT_SHOT_DEPLOY:-50}"
  xdotool key --window "$window" F5            # start training
  sleep "${STAGECRAFT_SHOT_TRAIN:-45}"
  import -window root "$out"
  if [ "$mode" = replan ]; then
    xdotool key --window "$window" ctrl+r      # re-plan now
    sleep "${STAGECRAFT_SHOT_REPLAN:-20}"
    import -window root "${out%.png}-replan.png"
  fi
  kill "$app"
  wait "$app" 2>/dev/null || true
}
if [ "${STAGECRAFT_SHOT_INNER:-}" = 1 ]; then
  run
  exit 0
fi
config=$(mktemp -d)
trap 'rm -rf "$config"' EXIT
export config
STAGECRAFT_SHOT_INNER=1 xvfb-run -a -s "-screen 0 ${STAGECRAFT_SHOT_SIZE:-1600x1000}x24" "$0" "$lang" "$out" "$mode"
"$build/app/cli/stagecraft-cli" cluster down --cluster jetson-edge >/dev/null 2>&1 || true
echo "wrote $out"
