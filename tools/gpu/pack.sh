#!/bin/bash
# Packs what a GPU machine without apache-tvm needs to run relay's GPU checks into .gpu/
# (ignored by git): TVM's Python package without its compiler library, the compiler library
# xz-compressed with the x86 filter (100 MB wheel -> ~58 MB), and apache-tvm-ffi and lark
# for the machine's Python (default 3.12). Run from the repository root after
# `python3.11 dev.py setup`; it takes ~4 minutes (xz). Then run tools/gpu/check.sh there
# (docs/backend.md, "Testing on a GPU").
set -euo pipefail
PY=${GPU_PYTHON_VERSION:-3.12}
SITE=$(.venv/bin/python -c 'import tvm, os; print(os.path.dirname(os.path.dirname(tvm.__file__)))')
FFI=$(.venv/bin/pip show apache-tvm-ffi | sed -n 's/^Version: //p')
mkdir -p .gpu && rm -rf .gpu/*
tar -C "$SITE" --exclude='tvm/lib/libtvm_compiler.so' --exclude='__pycache__' \
    --exclude='tvm/3rdparty' --exclude='tvm/src' --exclude='tvm/web' --exclude='tvm/include' \
    -cJf .gpu/tvm_py.tar.xz tvm
xz -T2 --x86 --lzma2=preset=9e,dict=256MiB -c "$SITE/tvm/lib/libtvm_compiler.so" > .gpu/comp.xz
tmp=$(mktemp -d)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$tmp" "apache-tvm-ffi==$FFI" lark==1.3.1
(cd "$tmp" && mkdir ffi lark && unzip -q apache_tvm_ffi-*.whl -d ffi && unzip -q lark-*.whl -d lark \
    && rm -rf ffi/tvm_ffi/3rdparty ffi/tvm_ffi/include ffi/tvm_ffi/cmake ffi/tvm_ffi/src)
tar -C "$tmp/ffi" -cJf .gpu/ffi.tar.xz .
tar -C "$tmp/lark" -cJf .gpu/lark.tar.xz .
rm -rf "$tmp"
du -sh .gpu
