#!/usr/bin/env bash
# Build the one-folder desktop bundle (dist/workbench/) with PyInstaller, then smoke-test it:
#   packaging/build_bundle.sh            build only
#   packaging/build_bundle.sh --smoke    build, then run the bundle offscreen on its own demo corpus:
#                                        headless train (frozen child writer) + export, and the window
#                                        trains through its Train tab (frozen training child) and quits.
# Takes a few minutes; CI runs it when asked: WORKBENCH_BUNDLE_SMOKE=1 bash .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
"$PY" -m pip install -q "pyinstaller>=6.5"
# The optional C merge loop of BPE training, built beside its source (pathex is the checkout): skipped
# with a warning when there is no compiler; the bundle then trains with the pure-Python loop.
"$PY" setup.py -q build_ext --inplace || echo "build_bundle: no C merge loop (no compiler?): the pure loop ships" >&2
"$PY" -m PyInstaller --noconfirm --clean --distpath dist --workpath build/pyinstaller packaging/workbench.spec
for loop in _bpe_merge _wordpiece_queue; do  # the C loops of BPE and WordPiece training
  if "$PY" -c "import workbench.core.$loop" 2>/dev/null \
     && ! find dist/workbench -name "$loop*" | grep -q .; then
    echo "build_bundle: the C loop $loop was built but is not in the bundle" >&2
    exit 1
  fi
done
[ "${1:-}" = "--smoke" ] || exit 0

app=dist/workbench/workbench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export QT_QPA_PLATFORM=offscreen
demo=$(find dist/workbench -path '*workbench/resources/demo/*.txt' | sort)
[ -n "$demo" ] || { echo "bundle smoke: the demo corpus is not in the bundle" >&2; exit 1; }
# shellcheck disable=SC2086
"$app" train $demo --project "$work/smoke.tokproj" --vocab-size 500 --progress none
"$app" export "$work/smoke.tokproj" --format hf --out "$work/tokenizer.json"
"$app" encode --tokenizer "$work/smoke.tokproj" --text "Hello wörld 👋" --json
# The other families and the SentencePiece writer (protobuf and the official schema, frozen).
# shellcheck disable=SC2086
"$app" train $demo --project "$work/smoke.tokproj" --model unigram --vocab-size 1500 --progress none
"$app" export "$work/smoke.tokproj" --format spm --out "$work/m.model"
"$app" encode --tokenizer "$work/m.model" --text "Hello wörld 👋" --json
"$app" demo --copy "$work/demo" >/dev/null
"$app" --smoke-test "$work/window"
test -s "$work/window/tokenizer.json"
echo "bundle smoke: ok ($(du -sh dist/workbench | cut -f1))"
