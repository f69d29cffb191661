#!/usr/bin/env bash
# Installs the Debian packages linea's build needs, only those that are missing.
# Runs apt-get as root directly, or through sudo when not root. Safe to run again: it does nothing
# when everything is present.
set -euo pipefail

packages=(cmake g++ make libeigen3-dev libxsimd-dev doctest-dev libbenchmark-dev nlohmann-json3-dev
          gnuplot-nox python3 python3-dev python3-venv)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: missing ${missing[*]}, and neither root nor sudo is available to install them" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
