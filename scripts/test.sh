#!/usr/bin/env bash
# One command from a fresh clone to a full test run: installs what is missing, builds Release,
# runs every test through CTest, then builds the engine's tests with AddressSanitizer and
# UndefinedBehaviorSanitizer and runs them again (the parsers read untrusted files).
# OXINFER_SKIP_SANITIZERS=1 skips the second pass.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
oxinfer_install_dependencies

jobs="$(nproc)"
export QT_QPA_PLATFORM=offscreen

echo "== Release build and tests"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
scripts/fetch-test-data.sh build/test-data
ctest --test-dir build --output-on-failure -j "$jobs"

if [ "${OXINFER_SKIP_SANITIZERS:-0}" != "1" ]; then
  echo "== ASan+UBSan build and engine tests"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOXINFER_SANITIZE=ON -DOXINFER_BUILD_APP=OFF
  cmake --build build-asan -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs"
fi
