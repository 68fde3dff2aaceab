#!/usr/bin/env bash
# scripts/setup.sh as if the packages named in PODSIM_SETUP_WITHOUT (space-separated) were
# missing from its lists: scripts/check_deps.py must then name them.
set -euo pipefail
setup="$(dirname "$0")/../../scripts/setup.sh"
if [ "${1:-}" = --list ]; then
  "$setup" "$@" | grep -vxF -f <(tr ' ' '\n' <<<"${PODSIM_SETUP_WITHOUT:-}" | grep .)
else
  exec "$setup" "$@"
fi
