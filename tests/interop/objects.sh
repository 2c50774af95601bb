#!/usr/bin/env bash
# Interop with object stores that are not the one `cargo test` runs: moto's S3 server (a
# second, independent S3) and Azurite (Microsoft's Azure Blob Storage emulator), both on
# 127.0.0.1.
#
#   bash tests/interop/objects.sh
#
# S3 (moto): tf2of from the sample tree into a bucket, of2tf from it into the bucket again;
# boto3 checks that the objects are the files of the same conversions on disk (keys, sizes,
# bytes) and that no multipart upload was left open; TensorFlow reads the of2tf output
# downloaded from the bucket (check.py); the lock object (created only if absent) keeps a
# second run out. Azure (Azurite): the same round trip through a
# container, identical bytes checked with azure-storage-blob.
#
# Keeps a virtualenv (tensorflow-cpu, protobuf, grpcio-tools, moto[server], boto3,
# azure-storage-blob) and Azurite (npm) under ${XDG_CACHE_HOME:-~/.cache}/ofconvert-interop,
# made on the first run. Needs python3 (3.9 to 3.12, for tensorflow-cpu), node and npm.
# The servers are stopped when the script ends, however it ends.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
testdata="$root/testdata"
work="$(mktemp -d)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/ofconvert-interop"
servers=()
cleanup() {
    local pid
    for pid in "${servers[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n==> %s\n' "$*"; }
die() { printf 'objects.sh: %s\n' "$*" >&2; exit 1; }

requirements="tensorflow-cpu protobuf grpcio-tools moto[server] boto3 azure-storage-blob"
venv="$cache/objects"
if ! [ -f "$venv/.requirements" ] || [ "$(cat "$venv/.requirements")" != "$requirements" ]; then
    step "virtualenv: $requirements"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    # shellcheck disable=SC2086
    "$venv/bin/pip" install --quiet $requirements
    echo "$requirements" >"$venv/.requirements"
fi
python="$venv/bin/python"
azurite="$cache/azurite/node_modules/.bin/azurite-blob"
if ! [ -x "$azurite" ]; then
    step "azurite (npm)"
    command -v npm >/dev/null 2>&1 || die "npm is needed to install azurite (apt-get install npm)"
    mkdir -p "$cache/azurite"
    npm install --prefix "$cache/azurite" --no-audit --no-fund --silent azurite
fi
export TF_CPP_MIN_LOG_LEVEL=3

step "build"
cargo build --release --locked --quiet -p ofconvert --manifest-path "$root/Cargo.toml"
ofconvert="${CARGO_TARGET_DIR:-$root/target}/release/ofconvert"

step "OneFlow's record.proto for the protobuf runtime"
mkdir -p "$work/py"
"$python" -m grpc_tools.protoc -I "$root/proto" --python_out="$work/py" \
    "$root/proto/oneflow/core/record/record.proto"
export PYTHONPATH="$work/py/oneflow/core/record${PYTHONPATH:+:$PYTHONPATH}"
objects() { "$python" "$here/objects.py" "$@"; }

free_port() {
    "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for PORT NAME LOG: until something listens on 127.0.0.1:PORT, 30 s at most.
wait_for() {
    local tries
    for tries in $(seq 60); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
            return
        fi
        sleep 0.5
    done
    cat "$3" >&2
    die "$2 did not listen on 127.0.0.1:$1 within 30 s"
}

step "the same conversions on disk"
"$ofconvert" --quiet tf2of "$testdata/datasets" "$work/of"
"$ofconvert" --quiet of2tf "$work/of" "$work/tf"

step "S3: moto_server on 127.0.0.1"
port="$(free_port)"
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$work/moto.log" 2>&1 &
servers+=("$!")
wait_for "$port" moto_server "$work/moto.log"
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true
objects s3-bucket "$AWS_ENDPOINT_URL" data

step "S3: tf2of local -> s3://data/of, of2tf s3://data/of -> s3://data/tf"
"$ofconvert" --quiet tf2of "$testdata/datasets" s3://data/of
objects s3-check "$AWS_ENDPOINT_URL" data of "$work/of"
"$ofconvert" --quiet of2tf s3://data/of s3://data/tf
objects s3-check "$AWS_ENDPOINT_URL" data tf "$work/tf"
"$ofconvert" --quiet verify s3://data/tf s3://data/of

step "S3: TensorFlow reads the of2tf output downloaded from the bucket"
objects s3-get "$AWS_ENDPOINT_URL" data tf "$work/tf-from-s3"
"$python" "$here/check.py" of2tf "$work/of" "$work/tf-from-s3"
step "S3: a run into an output another run holds fails at once, naming it (exit 2)"
objects s3-put "$AWS_ENDPOINT_URL" data locked/.ofconvert-lock "4242 on elsewhere"
code=0
"$ofconvert" --quiet tf2of "$testdata/datasets/tutorial" s3://data/locked 2>"$work/locked.err" || code=$?
cat "$work/locked.err"
[ "$code" = 2 ] || die "exit $code, not 2, into a locked output"
grep -q "4242 on elsewhere" "$work/locked.err" || die "the holder is not named"

unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION AWS_ENDPOINT_URL AWS_ALLOW_HTTP

step "Azure: azurite-blob on 127.0.0.1"
port="$(free_port)"
"$azurite" --blobHost 127.0.0.1 --blobPort "$port" --location "$work/azurite" \
    --skipApiVersionCheck --silent >"$work/azurite.log" 2>&1 &
servers+=("$!")
wait_for "$port" azurite-blob "$work/azurite.log"
# Azurite's well-known development account; object_store takes it with the emulator switch.
export AZURE_STORAGE_USE_EMULATOR=true AZURITE_BLOB_STORAGE_URL="http://127.0.0.1:$port"
key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
connection="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$key;BlobEndpoint=$AZURITE_BLOB_STORAGE_URL/devstoreaccount1;"
objects az-container "$connection" data

step "Azure: tf2of local -> az://data/of, of2tf az://data/of -> local, identical bytes"
"$ofconvert" --quiet tf2of "$testdata/datasets" az://data/of
objects az-check "$connection" data of "$work/of"
"$ofconvert" --quiet of2tf az://data/of "$work/tf-from-azure"
diff -r --exclude='*ofconvert-manifest.json' "$work/tf" "$work/tf-from-azure"
"$ofconvert" --quiet count az://data/of >/dev/null

step "interop with object stores: all outputs as on disk"
