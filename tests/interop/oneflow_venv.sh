# Sourced by run.sh, oneflow.sh and crates/python/ci.sh: the virtualenvs CI keeps in $cache,
# each rebuilt only when its requirements change. The one with real OneFlow 0.9.0 (CPython
# 3.10, the CUDA libraries its import needs, used on the CPU; about 2 GB, downloaded once into
# pip's cache):
#
#   cache=DIR; . tests/interop/oneflow_venv.sh; oneflow_venv_ready
#
# sets oneflow_venv (its directory) and oneflow_libs (the LD_LIBRARY_PATH its import needs);
# tensorflow_venv_ready sets tf_venv, the one TensorFlow virtualenv the three scripts share;
# venv DIR PYTHON REQUIREMENT... makes others.

find_python310() {
    if [ -n "${OFCONVERT_PYTHON310:-}" ]; then
        echo "$OFCONVERT_PYTHON310"
        return
    fi
    local candidate
    for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10.*/bin/python3.10; do
        if [ -x "$candidate" ]; then
            echo "$candidate"
            return
        fi
    done
    if command -v python3.10 >/dev/null 2>&1 && python3.10 -c '' >/dev/null 2>&1; then
        command -v python3.10
        return
    fi
    die "no CPython 3.10 found (pyenv versions 3.10.*, python3.10 on PATH, or OFCONVERT_PYTHON310): the OneFlow 0.9.0 wheel needs it"
}

# venv DIR PYTHON REQUIREMENT...: a virtualenv with exactly these requirements, reused when
# an earlier run made it with the same ones.
venv() {
    local dir="$1" python="$2"
    shift 2
    local wanted="$*"
    if [ -f "$dir/.requirements" ] && [ "$(cat "$dir/.requirements")" = "$wanted" ]; then
        return
    fi
    rm -rf "$dir"
    "$python" -m venv "$dir"
    "$dir/bin/pip" install --quiet --upgrade pip
    "$dir/bin/pip" install --quiet "$@"
    echo "$wanted" >"$dir/.requirements"
}

# TensorFlow with the protobuf runtime and its compiler, and TFDS (with Pillow, which its
# ArrayRecord data sources decode images with): one virtualenv for the TensorFlow interop
# (run.sh), OneFlow's (oneflow.sh, which reads TensorFlow's values from it) and the Python
# package's tests (ci.sh), made once instead of once each.
tensorflow_venv_ready() {
    mkdir -p "$cache"
    tf_venv="$cache/tensorflow"
    venv "$tf_venv" python3 tensorflow-cpu protobuf grpcio-tools tensorflow-datasets pillow
}

oneflow_venv_ready() {
    local python310
    python310="$(find_python310)"
    "$python310" -c 'import sys; assert sys.version_info[:2] == (3, 10), sys.version' ||
        die "$python310 is not CPython 3.10"
    mkdir -p "$cache"
    oneflow_venv="$cache/oneflow-0.9.0"
    venv "$oneflow_venv" "$python310" oneflow==0.9.0 'nvidia-cudnn-cu11==8.9.*' \
        'nvidia-cublas-cu11==11.11.*' 'numpy<2' 'protobuf<4'
    local site lib
    site="$("$oneflow_venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    oneflow_libs=""
    for lib in "$site"/nvidia/*/lib; do
        oneflow_libs="$oneflow_libs${oneflow_libs:+:}$lib"
    done
}

# PyTorch for the same Python, without its dependencies: torch 1.13.1 is the newest on PyPI
# whose CUDA libraries (cuDNN 8, cuBLAS 11) are those OneFlow's virtualenv already has, so it
# adds one 887 MB wheel and the 1 MB CUDA runtime instead of the several GB of CUDA wheels a
# newer torch pulls. Kept in $cache/torch-1.13.1 (a --target directory) and reused; after
# oneflow_venv_ready, sets torch_site (for PYTHONPATH) and torch_libs (LD_LIBRARY_PATH).
torch_beside_oneflow_ready() {
    torch_site="$cache/torch-1.13.1"
    local wanted="torch==1.13.1 nvidia-cuda-runtime-cu11==11.7.99 typing_extensions"
    if ! [ -f "$torch_site/.requirements" ] || [ "$(cat "$torch_site/.requirements")" != "$wanted" ]; then
        rm -rf "$torch_site"
        # shellcheck disable=SC2086
        "$oneflow_venv/bin/pip" install --quiet --no-deps --target "$torch_site" $wanted
        echo "$wanted" >"$torch_site/.requirements"
    fi
    torch_libs="$oneflow_libs:$torch_site/nvidia/cuda_runtime/lib"
}
