#!/usr/bin/env bash
# Packs the OpenCL benchmark (build/bin/bench/opencl_bench), the OpenCL NumPy-oracle
# test (with its cases) and the OpenCL backend's test into OUT.tar.xz, which runs on a
# machine with only a GPU driver's OpenCL platform and the ICD loader (no podsim
# dependencies, no packages): stripped binaries, every shared library they need beyond
# glibc, libstdc++ and libgcc (newer ones stay compatible) including an ICD loader, and
# scripts that point the dynamic loader at them and the ICD loader at the machine's
# OpenCL drivers:
#   bench.sh [ARGS]   opencl_bench ARGS
#   test.sh [ARGS]    opencl_numpy_integration_test ARGS on the bundled cases
#   backend.sh [ARGS] opencl_backend_test ARGS (GEMM choices, caches, memory, errors)
#   scripts/opencl_bundle.sh [OUT]     (default build/opencl-bundle)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build/opencl-bundle}"
binaries=("$root/build/bin/bench/opencl_bench" "$root/build/bin/tests/opencl_numpy_integration_test"
          "$root/build/bin/tests/opencl_backend_test")
for b in "${binaries[@]}"; do
  [ -x "$b" ] || { echo "opencl_bundle: build $b first" >&2; exit 1; }
done
rm -rf "$out" "$out.tar.xz"
mkdir -p "$out/lib"
for b in "${binaries[@]}"; do
  strip -o "$out/$(basename "$b")" "$b"
  ldd "$b" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*|libpthread.so.*|libdl.so.*|librt.so.*) ;;
      *) cp -L "$lib" "$out/lib/" ;;
    esac
  done
done
cp -r "$root/build/tests/numpy_cases" "$out/numpy_cases"
# The machine's own ICD loader is used where it has one (it knows where its drivers are);
# the bundled one, kept in lib/icd, only where it has none. Either reads OCL_ICD_VENDORS:
# a folder of the machine's registered platforms plus the NVIDIA driver's OpenCL library
# wherever the driver was mounted (containers often put it under /usr/local/nvidia,
# outside /etc/OpenCL/vendors) when no registered platform names it.
mkdir -p "$out/lib/icd"
mv "$out"/lib/libOpenCL.so* "$out/lib/icd/"
cat > "$out/env.sh" <<'RUN'
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$here/vendors"
cp /etc/OpenCL/vendors/*.icd "$here/vendors/" 2>/dev/null || true
if ! grep -qi nvidia "$here"/vendors/*.icd 2>/dev/null; then
  for lib in $(find /usr/local/nvidia /usr/lib /usr/lib64 /lib -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1); do
    echo "$lib" > "$here/vendors/nvidia-found.icd"
  done
fi
export OCL_ICD_VENDORS="$here/vendors"
libs="$here/lib"
if ! /sbin/ldconfig -p 2>/dev/null | grep -q 'libOpenCL.so.1 '; then libs="$libs:$here/lib/icd"; fi
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "OpenCL platforms registered: $(cat "$here"/vendors/*.icd 2>/dev/null | tr '\n' ' ')" >&2
echo "ICD loader: $(case "$libs" in *icd) echo bundled;; *) echo "the machine's";; esac)" >&2
RUN
cat > "$out/bench.sh" <<'RUN'
#!/bin/sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
exec "$here/opencl_bench" "$@"
RUN
cat > "$out/test.sh" <<'RUN'
#!/bin/sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
PODSIM_NUMPY_CASES="$here/numpy_cases" exec "$here/opencl_numpy_integration_test" "$@"
RUN
cat > "$out/backend.sh" <<'RUN'
#!/bin/sh
. "$(cd "$(dirname "$0")" && pwd)/env.sh"
exec "$here/opencl_backend_test" "$@"
RUN
chmod +x "$out/bench.sh" "$out/test.sh" "$out/backend.sh"
tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
du -sh "$out" "$out.tar.xz"
