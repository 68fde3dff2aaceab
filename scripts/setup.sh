#!/usr/bin/env bash
# Installs the Debian 12 packages podsim needs, skipping those already present.
# Runs as root, or through sudo. The README says why each package is there.
set -euo pipefail

packages=(
  cmake ninja-build g++ ccache pkg-config   # build
  libfmt-dev                                # formatting
  libtbb-dev                                # CPU backend: parallel loops
  libopenblas-dev                           # CPU backend: GEMM and convolution
  libcli11-dev                              # the CLI's argument parsing
  libtomlplusplus-dev                       # chip configuration files (TOML)
  capnproto libcapnp-dev libssl-dev         # the executable format (Cap'n Proto)
  nlohmann-json3-dev                        # safetensors headers (JSON)
  libgtest-dev                              # tests
  libbenchmark-dev                          # benchmarks
  libsystemc-dev                            # the cycle-approximate timing model (SystemC 2.3)
  zlib1g-dev                                # reading gzip-compressed datasets
  python3-sklearn                           # the handwritten-digits dataset of `podsim train mlp`
  python3-numpy                             # test oracle (/usr/bin/python3)
  python3-torch                             # test oracle and benchmark reference (PyTorch 1.13)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
