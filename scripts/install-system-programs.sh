#!/usr/bin/env bash
# Installs the system programs some tests need beyond Node.js, from Debian's packages (as root).
#   bash scripts/install-system-programs.sh            everything the suite uses (.ci/run runs this)
#   bash scripts/install-system-programs.sh chromium   one need: chromium, postgres, speech, pytest, go
# What each need is for, and how the tests find it: test/helpers/system-programs.ts. Without them
# `npm test` skips the tests that need them and names them at the end (under CI=true a skip fails).
set -euo pipefail

packages_for() {
  case "$1" in
    chromium) echo "chromium" ;;                                             # the consoles' browser tests
    postgres) echo "postgresql-15" ;;                                        # the cluster's state backend
    speech) echo "espeak-ng sox pocketsphinx pocketsphinx-en-us" ;;          # local speech recognition
    pytest) echo "python3 python3-pytest python3-pytest-xdist python3-pip" ;; # the Python test helpers (pip installs the package into a venv)
    go) echo "golang-go" ;;                                                  # the Go test helpers
    *) echo "unknown need '$1' (chromium, postgres, speech, pytest, go)" >&2; return 1 ;;
  esac
}

needs=("$@")
[ ${#needs[@]} -gt 0 ] || needs=(chromium postgres speech pytest go)
wanted=()
for need in "${needs[@]}"; do
  for pkg in $(packages_for "$need"); do
    # Installed already: nothing to fetch (CI's machine keeps what an earlier run installed).
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || wanted+=("$pkg")
  done
done
[ ${#wanted[@]} -gt 0 ] || exit 0
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${wanted[@]}"
