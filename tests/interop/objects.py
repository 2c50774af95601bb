"""What ofconvert left in an object store, seen through the store's own client libraries.

    objects.py s3-bucket ENDPOINT BUCKET
        creates BUCKET in the S3 server at ENDPOINT (boto3)
    objects.py s3-check ENDPOINT BUCKET PREFIX LOCAL
        the objects under PREFIX are the files under LOCAL: the same relative keys, sizes and
        bytes (manifests, which name their own location, only present in both); and no
        multipart upload is left open in BUCKET
    objects.py s3-get ENDPOINT BUCKET PREFIX DIR
        downloads the objects under PREFIX into DIR, keeping their relative keys
    objects.py s3-put ENDPOINT BUCKET KEY TEXT
        writes TEXT to the object KEY
    objects.py az-container CONNECTION CONTAINER
        creates CONTAINER in the Azure Blob service (azure-storage-blob)
    objects.py az-check CONNECTION CONTAINER PREFIX LOCAL
        as s3-check, for blobs; Azure has no open uploads to list (uncommitted blocks are
        not blobs)

    objects.py gcs-bucket BASE BUCKET
        creates BUCKET in the GCS emulator at BASE through the JSON API (urllib)
    objects.py gcs-check BASE BUCKET PREFIX LOCAL
        as s3-check, for the emulator's objects (JSON API listing and downloads)
    objects.py gcs-put BASE BUCKET KEY TEXT
        writes TEXT to the object KEY (JSON API media upload)
    objects.py binary-version PATH
        prints the fake-gcs-server version that the Go binary PATH was built from

boto3 reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION from the environment.
Exits 1 naming the first difference.
"""

import os
import sys

MANIFEST = "ofconvert-manifest.json"


def local_files(root):
    found = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.startswith("."):
                continue
            path = os.path.join(directory, name)
            found[os.path.relpath(path, root)] = path
    return found


def compare(store, local, read):
    """store: relative key -> size; local: relative path -> file; read(key) -> bytes."""
    if sorted(store) != sorted(local):
        only_store = sorted(set(store) - set(local))
        only_local = sorted(set(local) - set(store))
        sys.exit(f"keys differ: only in the store {only_store}, only on disk {only_local}")
    for key, path in sorted(local.items()):
        if key.endswith(MANIFEST):
            continue
        size = os.path.getsize(path)
        if store[key] != size:
            sys.exit(f"{key}: {store[key]} bytes in the store, {size} on disk")
        with open(path, "rb") as f:
            if read(key) != f.read():
                sys.exit(f"{key}: the bytes differ")
    print(f"{len(store)} objects: keys, sizes and bytes as on disk")


def s3(endpoint):
    import boto3

    return boto3.client("s3", endpoint_url=endpoint)


def s3_objects(client, bucket, prefix):
    found = {}
    for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix + "/"
    ):
        for item in page.get("Contents", []):
            relative = item["Key"][len(prefix) + 1 :]
            if not any(part.startswith(".") for part in relative.split("/")):
                found[relative] = item["Size"]
    return found


def s3_check(endpoint, bucket, prefix, local):
    client = s3(endpoint)
    store = s3_objects(client, bucket, prefix)

    def read(key):
        return client.get_object(Bucket=bucket, Key=f"{prefix}/{key}")["Body"].read()

    compare(store, local_files(local), read)
    uploads = client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    if uploads:
        sys.exit(f"multipart uploads left open: {[u['Key'] for u in uploads]}")
    print("no multipart upload left open")


def s3_get(endpoint, bucket, prefix, directory):
    client = s3(endpoint)
    for key in s3_objects(client, bucket, prefix):
        path = os.path.join(directory, key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        client.download_file(bucket, f"{prefix}/{key}", path)


def azure(connection, container):
    from azure.storage.blob import BlobServiceClient

    return BlobServiceClient.from_connection_string(connection).get_container_client(
        container
    )


def az_check(connection, container, prefix, local):
    client = azure(connection, container)
    store = {}
    for blob in client.list_blobs(name_starts_with=prefix + "/"):
        relative = blob.name[len(prefix) + 1 :]
        if not any(part.startswith(".") for part in relative.split("/")):
            store[relative] = blob.size

    def read(key):
        return client.download_blob(f"{prefix}/{key}").readall()

    compare(store, local_files(local), read)


def gcs_request(method, url, body=None, headers=None):
    import urllib.request

    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    with urllib.request.urlopen(request) as response:
        return response.read()


def gcs_check(base, bucket, prefix, local):
    import json
    import urllib.parse

    store = {}
    token = None
    while True:
        query = {"prefix": prefix + "/"}
        if token:
            query["pageToken"] = token
        page = json.loads(
            gcs_request("GET", f"{base}/storage/v1/b/{bucket}/o?{urllib.parse.urlencode(query)}")
        )
        for item in page.get("items", []):
            relative = item["name"][len(prefix) + 1 :]
            if not any(part.startswith(".") for part in relative.split("/")):
                store[relative] = int(item["size"])
        token = page.get("nextPageToken")
        if not token:
            break

    def read(key):
        name = urllib.parse.quote(f"{prefix}/{key}", safe="")
        return gcs_request("GET", f"{base}/download/storage/v1/b/{bucket}/o/{name}?alt=media")

    compare(store, local_files(local), read)


def gcs_put(base, bucket, key, text):
    import urllib.parse

    query = urllib.parse.urlencode({"uploadType": "media", "name": key})
    gcs_request(
        "POST",
        f"{base}/upload/storage/v1/b/{bucket}/o?{query}",
        text.encode(),
        {"Content-Type": "application/octet-stream"},
    )


def main(argv):
    command, args = argv[1], argv[2:]
    if command == "s3-bucket":
        s3(args[0]).create_bucket(Bucket=args[1])
    elif command == "s3-check":
        s3_check(*args)
    elif command == "s3-get":
        s3_get(*args)
    elif command == "s3-put":
        s3(args[0]).put_object(Bucket=args[1], Key=args[2], Body=args[3].encode())
    elif command == "gcs-bucket":
        import json

        gcs_request(
            "POST",
            f"{args[0]}/storage/v1/b",
            json.dumps({"name": args[1]}).encode(),
            {"Content-Type": "application/json"},
        )
    elif command == "gcs-check":
        gcs_check(*args)
    elif command == "gcs-put":
        gcs_put(*args)
    elif command == "binary-version":
        import re

        with open(args[0], "rb") as f:
            found = set(re.findall(rb"fsouza/fake-gcs-server\s+(v[0-9][^\s]*)", f.read()))
        print("fake-gcs-server", *sorted(v.decode() for v in found))
    elif command == "az-container":
        azure(args[0], args[1]).create_container()
    elif command == "az-check":
        az_check(*args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
