#!/usr/bin/env bash
# Copies the screenshots the UI end-to-end tests and the chart bench wrote
# (test-output/screenshots/ui_*.png, bench_chart_*.png) into docs/screenshots/.
# Run `npx vitest run --project e2e test/e2e/ui_` (and `node bench/ui/framerate.mjs`) first.
set -euo pipefail
cd "$(dirname "$0")/.."
src=test-output/screenshots
dst=docs/screenshots
mkdir -p "$dst"
shopt -s nullglob
files=()
# Failure screenshots (ui_*_failed.png) are for debugging, not for the docs.
for f in "$src"/ui_*.png "$src"/bench_chart_*.png; do
  case "$f" in *_failed.png) ;; *) files+=("$f") ;; esac
done
if [ ${#files[@]} -eq 0 ]; then
  echo "no screenshots in $src: run the UI e2e tests first" >&2
  exit 1
fi
cp -f "${files[@]}" "$dst"/
echo "copied ${#files[@]} screenshots to $dst:"
for f in "${files[@]}"; do echo "  $(basename "$f")"; done
