#!/usr/bin/env bash
# Renders every pane of oxinfer-studio to docs/studio/<pane>.png (offscreen, no display needed)
# in a throwaway profile, so the pictures never show anyone's own chats or models:
#  - the chats are docs/studio/demo-chat-*.json, written for the pictures (imported as a user
#    would import an exported chat), not generated here;
#  - the Models pane lists synthetic checkpoints of real models' shapes (oxinfer synth: random
#    weights, so sizes, parameters and memory are real; the files are made once, in
#    build/bench-models, as scripts/bench.sh makes them);
#  - the loaded model is the tiny test model of tests/reference (no real model can be downloaded
#    on the build machines).
# Usage: scripts/screenshots.sh [BUILD_DIR]   (default: build; needs oxinfer and oxinfer-studio built)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
studio="$build/app/oxinfer-studio"
oxinfer="$build/cli/oxinfer"
for binary in "$studio" "$oxinfer"; do
  [ -x "$binary" ] || { echo "screenshots: $binary is not built" >&2; exit 1; }
done

models_cache="build/bench-models"
mkdir -p "$models_cache"
synth() {  # shape arch type file
  [ -f "$models_cache/$4" ] || "$oxinfer" synth --arch "$2" --shape "$1" --type "$3" --out "$models_cache/$4"
}
synth qwen3.5-0.8b qwen35 q8_0 qwen3.5-0.8b-q8_0.gguf
synth llama-3.2-1b llama q4_k llama-3.2-1b-q4_k.gguf
synth gemma-4-e2b gemma4 q4_k gemma-4-e2b-q4_k.gguf

profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
mkdir -p "$profile/models"
ln -s "$PWD/$models_cache/qwen3.5-0.8b-q8_0.gguf" "$profile/models/Qwen3.5-0.8B-Q8_0.gguf"
ln -s "$PWD/$models_cache/llama-3.2-1b-q4_k.gguf" "$profile/models/Llama-3.2-1B-Q4_K.gguf"
ln -s "$PWD/$models_cache/gemma-4-e2b-q4_k.gguf" "$profile/models/gemma-4-E2B-Q4_K.gguf"
cp -r tests/reference/llm/qwen3/hf "$profile/models/qwen3-tiny-test"

export QT_QPA_PLATFORM=offscreen OXINFER_STUDIO_DATA_DIR="$profile/data" OXINFER_MODEL_PATH="$profile/models"
export HF_HUB_CACHE="$profile/hub" XDG_CONFIG_HOME="$profile/config"
first=1
for pane in chat models settings transcribe; do
  args=(--screenshot "docs/studio/$pane.png" --pane "$pane" --model "$profile/models/qwen3-tiny-test")
  if [ "$first" = 1 ]; then  # the older chat first: the sidebar lists the newest on top
    args+=(--import-chat docs/studio/demo-chat-lisbon.json --import-chat docs/studio/demo-chat-csv.json)
    first=0
  fi
  "$studio" "${args[@]}"
  echo "docs/studio/$pane.png"
done
# The chat again in the dark theme (the setting the Settings pane writes).
mkdir -p "$XDG_CONFIG_HOME/oxinfer"
printf '[ui]\ntheme=dark\n' > "$XDG_CONFIG_HOME/oxinfer/Oxinfer Studio.conf"
"$studio" --screenshot docs/studio/chat-dark.png --pane chat --model "$profile/models/qwen3-tiny-test"
echo "docs/studio/chat-dark.png"
rm "$XDG_CONFIG_HOME/oxinfer/Oxinfer Studio.conf"
# The first-run page: no model on the computer yet.
rm -rf "$profile/models"/* "$profile/data"
"$studio" --screenshot docs/studio/first-run.png
echo "docs/studio/first-run.png"
