#!/usr/bin/env bash
# One command from a fresh clone to a running Oxinfer Studio: installs what is missing, builds
# (Release), starts the app. Extra arguments go to the app, e.g. scripts/run.sh --screenshot shot.png
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
oxinfer_install_dependencies

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --target oxinfer oxinfer-studio -j "$(nproc)"

if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ]; then
  echo "run: no display found; rendering offscreen (use --screenshot FILE.png to see the window)" >&2
  export QT_QPA_PLATFORM=offscreen
fi
exec build/app/oxinfer-studio "$@"
