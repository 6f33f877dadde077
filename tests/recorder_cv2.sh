#!/bin/sh
# memsim record --fake: OpenCV reads and writes image files in native code
# (cv::imread, cv::imwrite), past the recorder's open().  A file the
# script wrote during the recording (PIL's save, through open(): a
# scratch copy) is read back by cv2.imread from that copy, and
# cv2.imwrite writes a scratch copy, not the user's folder.
# ultralytics/yolov5's train.py saves results.png with matplotlib and
# reads it with cv2.imread for TensorBoard: it read the user's path, got
# None and stopped on None[..., ::-1].  Needs Python 3, PyTorch, OpenCV
# and Pillow; skips (77) without them.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
. "${MSIM_TESTDATA:-tests/data}/../testlib.sh"
need_torch
"$PY" -c 'import cv2, PIL' 2>/dev/null ||
	{ echo "no OpenCV or Pillow: skipped"; exit 77; }
mkdir "$tmp/run"
(cd "$tmp/run" && $MEMSIM record -o "$tmp/c.csv" -- "$PY" \
	"$SRC/recorder/cv2_files.py") >"$tmp/err" 2>&1 ||
	fail "record: $(tail -3 "$tmp/err")"
grep -q '^pil.png ((6, 5, 3), 9)$' "$tmp/err" ||
	fail "PIL's file not read back: $(grep '^pil.png' "$tmp/err")"
grep -q '^cv.png True ((4, 3, 3), 200)$' "$tmp/err" ||
	fail "cv2.imwrite's file not read back: $(grep '^cv.png' "$tmp/err")"
grep -q '^missing None$' "$tmp/err" || fail "a missing file read"
[ -z "$(ls "$tmp/run")" ] || fail "written into the user's folder: $(ls "$tmp/run")"
grep -q 'wrote 2 files' "$tmp/err" || fail "scratch writes: $(grep 'wrote' "$tmp/err")"
finish recorder_cv2.sh
