"""A translating proxy in front of fake-gcs-server for the writes of GCS's XML API.

object_store writes GCS objects through the XML API (PUT /BUCKET/OBJECT, XML multipart
uploads, PUT with x-goog-copy-source), which fake-gcs-server does not serve: it answers
"400 invalid uploadType" (fsouza/fake-gcs-server#1164, unmerged; #852 for multipart).
This proxy turns each of them into the JSON API's request for the same thing and passes
everything else (reads, ranged reads, listings, HEAD, DELETE: XML requests the emulator
serves) through untouched:

    PUT /B/O                       -> POST /upload/storage/v1/b/B/o?uploadType=multipart
      x-goog-if-generation-match      with ifGenerationMatch (the emulator enforces it)
    PUT /B/O + x-goog-copy-source  -> POST /storage/v1/b/B/o/SRC/copyTo/b/B/o/O
    POST /B/O?uploads              -> an upload id of the proxy's own
    PUT /B/O?partNumber=N&uploadId -> the part kept by the proxy (ETag: its MD5)
    POST /B/O?uploadId=ID          -> the parts named in the request, in order, stored as
                                      one object by a JSON upload (as GCS composes them)
    DELETE /B/O?uploadId=ID        -> the parts dropped

The emulator's answers are turned back into the XML API's (ETag and x-goog-generation
headers, XML documents); its errors pass through with their status. Every request is
logged on stderr as METHOD PATH -> STATUS (translated ones marked).

    gcs_xml_proxy.py LISTEN_PORT UPSTREAM_PORT
"""

import hashlib
import http.client
import http.server
import json
import sys
import threading
import urllib.parse
import uuid
import xml.etree.ElementTree as ElementTree

UPSTREAM = ("127.0.0.1", 0)
UPLOADS = {}
UPLOADS_LOCK = threading.Lock()


def upstream(method, path, body=b"", headers=None):
    connection = http.client.HTTPConnection(*UPSTREAM, timeout=60)
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, response.getheaders(), data


def quoted(path):
    return urllib.parse.quote(path, safe="")


def media_upload(bucket, name, data, if_generation_match=None):
    """Stores DATA as BUCKET/NAME through the JSON API's multipart upload."""
    boundary = "ofconvert-" + uuid.uuid4().hex
    metadata = json.dumps({"name": name}).encode()
    body = (
        f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".encode()
        + metadata
        + f"\r\n--{boundary}\r\nContent-Type: application/octet-stream\r\n\r\n".encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    query = {"uploadType": "multipart", "name": name}
    if if_generation_match is not None:
        query["ifGenerationMatch"] = if_generation_match
    return upstream(
        "POST",
        f"/upload/storage/v1/b/{quoted(bucket)}/o?{urllib.parse.urlencode(query)}",
        body,
        {"Content-Type": f"multipart/related; boundary={boundary}"},
    )


def object_headers(data):
    """The XML API's headers for the object the JSON answer DATA describes."""
    described = json.loads(data)
    etag = described.get("etag") or described.get("md5Hash") or ""
    return {"ETag": f'"{etag}"', "x-goog-generation": str(described.get("generation", ""))}


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def answer(self, status, body=b"", headers=None, translated=True, length=None):
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        mark = " (translated)" if translated else ""
        print(f"{self.command} {self.path} -> {status}{mark}", file=sys.stderr, flush=True)

    def body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def target(self):
        """(bucket, object name, query) of an XML API request."""
        url = urllib.parse.urlsplit(self.path)
        bucket, _, name = url.path.lstrip("/").partition("/")
        return (
            urllib.parse.unquote(bucket),
            urllib.parse.unquote(name),
            urllib.parse.parse_qs(url.query, keep_blank_values=True),
        )

    def passed_through(self):
        headers = {
            key: value
            for key, value in self.headers.items()
            if key.lower() not in ("host", "connection", "content-length")
        }
        status, response_headers, data = upstream(self.command, self.path, self.body(), headers)
        kept = {
            key: value
            for key, value in response_headers
            if key.lower() not in ("content-length", "connection", "transfer-encoding")
        }
        # A HEAD's length is the object's, not that of the empty body.
        length = dict((key.lower(), value) for key, value in response_headers).get(
            "content-length"
        )
        self.answer(
            status, data, kept, translated=False, length=length if self.command == "HEAD" else None
        )

    def do_GET(self):
        self.passed_through()

    def do_HEAD(self):
        self.passed_through()

    def do_DELETE(self):
        bucket, name, query = self.target()
        if "uploadId" in query:
            with UPLOADS_LOCK:
                UPLOADS.pop(query["uploadId"][0], None)
            self.body()
            return self.answer(204)
        self.passed_through()

    def do_POST(self):
        bucket, name, query = self.target()
        if self.path.startswith(("/upload/", "/storage/")):
            return self.passed_through()
        data = self.body()
        if "uploads" in query:
            upload = uuid.uuid4().hex
            with UPLOADS_LOCK:
                UPLOADS[upload] = {"bucket": bucket, "name": name, "parts": {}}
            document = (
                "<?xml version='1.0' encoding='UTF-8'?><InitiateMultipartUploadResult>"
                f"<Bucket>{bucket}</Bucket><Key>{name}</Key><UploadId>{upload}</UploadId>"
                "</InitiateMultipartUploadResult>"
            )
            return self.answer(200, document.encode(), {"Content-Type": "application/xml"})
        if "uploadId" in query:
            with UPLOADS_LOCK:
                upload = UPLOADS.pop(query["uploadId"][0], None)
            if upload is None:
                return self.answer(404, b"<Error><Code>NoSuchUpload</Code></Error>")
            numbers = [
                int(element.text)
                for element in ElementTree.fromstring(data).iter()
                if element.tag.endswith("PartNumber")
            ]
            try:
                whole = b"".join(upload["parts"][number] for number in numbers)
            except KeyError as missing:
                return self.answer(400, f"<Error><Code>InvalidPart</Code><Message>{missing}</Message></Error>".encode())
            status, _, answer = media_upload(bucket, name, whole)
            if status != 200:
                return self.answer(status, answer)
            headers = object_headers(answer)
            document = (
                "<?xml version='1.0' encoding='UTF-8'?><CompleteMultipartUploadResult>"
                f"<Bucket>{bucket}</Bucket><Key>{name}</Key><ETag>{headers['ETag']}</ETag>"
                "</CompleteMultipartUploadResult>"
            )
            return self.answer(200, document.encode(), headers)
        self.answer(501, b"not translated: POST " + self.path.encode())

    def do_PUT(self):
        bucket, name, query = self.target()
        data = self.body()
        if "uploadId" in query:
            with UPLOADS_LOCK:
                upload = UPLOADS.get(query["uploadId"][0])
                if upload is not None:
                    upload["parts"][int(query["partNumber"][0])] = data
            if upload is None:
                return self.answer(404, b"<Error><Code>NoSuchUpload</Code></Error>")
            return self.answer(200, headers={"ETag": f'"{hashlib.md5(data).hexdigest()}"'})
        source = self.headers.get("x-goog-copy-source")
        if source is not None:
            source_bucket, _, source_name = urllib.parse.unquote(source).lstrip("/").partition("/")
            path = (
                f"/storage/v1/b/{quoted(source_bucket)}/o/{quoted(source_name)}"
                f"/copyTo/b/{quoted(bucket)}/o/{quoted(name)}"
            )
            match = self.headers.get("x-goog-if-generation-match")
            if match is not None:
                path += f"?ifGenerationMatch={match}"
            status, _, answer = upstream("POST", path)
            return self.answer(status, b"" if status == 200 else answer)
        status, _, answer = media_upload(
            bucket, name, data, self.headers.get("x-goog-if-generation-match")
        )
        if status != 200:
            return self.answer(status, answer)
        self.answer(200, headers=object_headers(answer))


def main(argv):
    global UPSTREAM
    listen, upstream_port = int(argv[1]), int(argv[2])
    UPSTREAM = ("127.0.0.1", upstream_port)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", listen), Proxy)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv)
