#!/usr/bin/env bash
# Re-takes the README's screenshots of the console during live training: starts the console
# under Xvfb on the shipped jetson-edge cluster, starts it as local workers (Ctrl+L),
# deploys (F7), trains (F5), and captures the screen once training runs.
#
#   docs/screenshots.sh [LANG] [OUT.png] [replan]   e.g. docs/screenshots.sh zh_CN docs/console-zh_CN.png
#
# STAGECRAFT_SHOT_SIZE sets the screen (default 1600x1000; a laptop's is 1366x768).
# It waits for the local workers (at most STAGECRAFT_SHOT_UP=120 s) and for the deploy, which
# profiles them first (at most STAGECRAFT_SHOT_DEPLOY=600 s), then trains for
# STAGECRAFT_SHOT_TRAIN=45 s before the capture.
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


# Waits until the console's log (its stderr) shows the training controller in one of the
# states PATTERN matches (English or Chinese), at most SECONDS; the states it passed through
# before the key press that asked for it do not count.
wait_for_state() {
  local pattern=$1 seconds=$2 from=$3
  for _ in $(seq 1 $((seconds * 2))); do
    tail -n +"$from" "$log" | grep -qE "trainingcontroller: state: \"($pattern)\"" && return 0
    sleep 0.5
  done
  echo "screenshots.sh: the console did not reach state $pattern within $seconds s" >&2
  return 1
}

run() {
  export XDG_CONFIG_HOME=$config
  log=$config/console.log
  "$build/app/gui/stagecraft" --cluster jetson-edge --model "${STAGECRAFT_SHOT_MODEL:-vgg11}" --lang "$lang" \
    2> >(tee "$log" >&2) &
  local app=$!
  local window=""
  for _ in $(seq 1 60); do
    window=$(xdotool search --pid "$app" --onlyvisible --class stagecraft 2>/dev/null | head -n 1 || true)
    [ -n "$window" ] && break
    sleep 0.5
  done
  [ -n "$window" ] || { echo "screenshots.sh: the console did not open" >&2; kill "$app"; exit 1; }
  xdotool windowfocus --sync "$window"
  local from
  from=$(($(wc -l < "$log") + 1))
  xdotool key --window "$window" ctrl+l        # start the local cluster
  wait_for_state "Idle|空闲" "${STAGECRAFT_SHOT_UP:-120}" "$from" || { kill "$app"; exit 1; }
  from=$(($(wc -l < "$log") + 1))
  xdotool key --window "$window" F7            # deploy (profiling the workers first)
  wait_for_state "Deployed|已部署" "${STAGECRAFT_SHOT_DEPLOY:-600}" "$from" || { kill "$app"; exit 1; }
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
