//! Errors of the object stores as `io::Error`s the engine can tell apart, in words that say
//! what failed and what to do: the store's code (`NoSuchBucket`, `SignatureDoesNotMatch`)
//! and message kept, the rest of its error document dropped, the variable to set named,
//! and the request that failed last (with how often it was tried).

use std::io;

use crate::kind::{StoreInfo, StoreKind};

/// The `io::Error` of a store error: not-found stays not-found (so that "absent" can be
/// told from "failed"), denied access stays permission-denied.
pub fn store_error(info: &StoreInfo, err: object_store::Error) -> io::Error {
    let kind =
        match &err {
            object_store::Error::NotFound { .. } => io::ErrorKind::NotFound,
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. } => io::ErrorKind::PermissionDenied,
            object_store::Error::AlreadyExists { .. }
            | object_store::Error::Precondition { .. } => io::ErrorKind::AlreadyExists,
            object_store::Error::NotSupported { .. }
            | object_store::Error::NotImplemented { .. } => io::ErrorKind::Unsupported,
            _ => io::ErrorKind::Other,
        };
    io::Error::new(kind, describe(info, &err.to_string()))
}

/// The HTTP status a store answered a failed request with, when it answered.
pub fn answered_status(err: &object_store::Error) -> Option<u16> {
    let text = err.to_string();
    let status = parse(&text)?.status?;
    status.get(..3)?.parse().ok()
}

/// How a request that got no answer failed, when it got none.
pub fn transport_kind(err: &object_store::Error) -> Option<object_store::client::HttpErrorKind> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = cause {
        if let Some(http) = current.downcast_ref::<object_store::client::HttpError>() {
            return Some(http.kind());
        }
        cause = current.source();
    }
    None
}

/// What a failed request to a store was and how it ended, read from `object_store`'s
/// message (`... Error performing GET URL in 3ms, after 2 retries, ... - Server returned
/// non-2xx status code: 404 Not Found: <?xml ...`).
#[derive(Debug, Default, PartialEq)]
struct Failure<'a> {
    /// `GET http://host/bucket?list-type=2`
    request: &'a str,
    /// `after 2 retries`, when it was tried again.
    retries: Option<String>,
    /// `404 Not Found`, when the store answered.
    status: Option<&'a str>,
    /// The store's code (`NoSuchBucket`) and message, from its error document.
    code: Option<&'a str>,
    message: Option<String>,
    /// What went wrong when the store did not answer (`HTTP error: ...`).
    transport: Option<&'a str>,
}

fn parse(text: &str) -> Option<Failure<'_>> {
    // The innermost request: the outer words name only the operation.
    let performing = &text[text.rfind("Error performing ")? + "Error performing ".len()..];
    let (request, rest) = performing.split_once(" in ")?;
    let (timing, outcome) = rest.split_once(" - ")?;
    let retries = timing
        .split_once(", after ")
        .and_then(|(_, after)| after.split(',').next())
        .map(|after| format!("after {}", after.trim()));
    let mut failure = Failure {
        request,
        retries,
        ..Failure::default()
    };
    let answered = outcome
        .strip_prefix("Server returned non-2xx status code: ")
        .or_else(|| outcome.strip_prefix("Server returned error response: "));
    match answered {
        Some(answer) => {
            let (status, body) = match answer.split_once(": ") {
                Some((status, body)) if starts_with_status(status) => (Some(status), body),
                _ if starts_with_status(answer) => (Some(answer), ""),
                _ => (None, answer),
            };
            failure.status = status;
            failure.code = element(body, "Code");
            failure.message = element(body, "Message")
                .map(str::to_owned)
                .or_else(|| json_message(body))
                .or_else(|| plain_text(body));
        }
        None => failure.transport = Some(outcome.trim_start_matches("HTTP error: ")),
    }
    Some(failure)
}

fn starts_with_status(text: &str) -> bool {
    text.len() >= 3 && text.as_bytes()[..3].iter().all(u8::is_ascii_digit)
}

/// The text of the first `<name>...</name>` in an XML document.
fn element<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    let start = body.find(&format!("<{name}>"))? + name.len() + 2;
    let end = body[start..].find(&format!("</{name}>"))? + start;
    Some(body[start..end].trim()).filter(|text| !text.is_empty())
}

/// The message of a JSON error (`{"error": {"message": "..."}}`), as GCS's JSON API says.
fn json_message(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let message = value
        .pointer("/error/message")
        .or_else(|| value.get("message"))?;
    message.as_str().map(str::to_owned)
}

/// A short body that is not a document: one line, at most 200 characters.
fn plain_text(body: &str) -> Option<String> {
    let body = body.trim();
    if body.is_empty() || body.starts_with('<') || body.starts_with('{') {
        return None;
    }
    let line = body.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(match line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    })
}

/// The message of a store error.
fn describe(info: &StoreInfo, text: &str) -> String {
    let Some(failure) = parse(text) else {
        return text.to_owned();
    };
    // The service's address is named: its request says no more.
    if let Some(credentials) = no_credentials(info, &failure) {
        return credentials;
    }
    let mut said = {
        let mut said = match (failure.code, failure.status) {
            (Some(code), Some(status)) => format!("{code} ({status})"),
            (Some(code), None) => code.to_owned(),
            (None, Some(status)) => status.to_owned(),
            (None, None) => failure.transport.unwrap_or("failed").to_owned(),
        };
        if let Some(message) = &failure.message {
            said.push_str(": ");
            said.push_str(message);
        }
        if let Some(hint) = failure.code.and_then(|code| hint(info, code)) {
            said.push_str("; ");
            said.push_str(&hint);
        }
        said
    };
    said.push_str(&format!(" ({}", failure.request));
    if let Some(retries) = &failure.retries {
        said.push_str(&format!(", {retries}"));
    }
    said.push(')');
    said
}

/// Where a request for credentials to the instance metadata service failed: the message
/// that names the variables to set instead.
fn no_credentials(info: &StoreInfo, failure: &Failure<'_>) -> Option<String> {
    let url = failure.request.split_once(' ')?.1;
    let service = info
        .metadata
        .iter()
        .find(|service| url.starts_with(service.trim_end_matches('/')))?;
    let answer = match (failure.status, failure.transport) {
        (Some(status), _) => format!("answered {status}"),
        (None, Some(transport)) => format!("did not answer ({transport})"),
        (None, None) => "did not answer".to_owned(),
    };
    let what = match info.kind {
        StoreKind::S3 => {
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN for \
             temporary ones), or AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN; \
             ~/.aws/credentials and AWS_PROFILE are not read. A public bucket is read \
             without credentials with --anonymous (or AWS_SKIP_SIGNATURE=true)"
        }
        StoreKind::Gcs => {
            "set GOOGLE_APPLICATION_CREDENTIALS (or GOOGLE_SERVICE_ACCOUNT) to a service \
             account's key file, or run `gcloud auth application-default login`. A public \
             bucket is read without credentials with --anonymous (or \
             GOOGLE_SKIP_SIGNATURE=true)"
        }
        StoreKind::Azure => {
            "set AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY (or \
             AZURE_STORAGE_SAS_KEY, or AZURE_CLIENT_ID, AZURE_CLIENT_SECRET and \
             AZURE_TENANT_ID). A public container is read without credentials with \
             --anonymous (or AZURE_SKIP_SIGNATURE=true)"
        }
        StoreKind::Http => return None,
    };
    Some(format!(
        "no credentials for {}: none in the environment, and the instance metadata service \
         at {service} {answer}; {what}",
        info.kind.name()
    ))
}

/// What to do about the store's error `code`, where there is something to say.
fn hint(info: &StoreInfo, code: &str) -> Option<String> {
    let prefix = info.kind.variable_prefix()?;
    let at = match &info.endpoint {
        Some(endpoint) => format!("at {endpoint}"),
        None => format!("in {}", info.kind.name()),
    };
    let endpoint_variable = match info.kind {
        StoreKind::S3 => "AWS_ENDPOINT_URL",
        StoreKind::Gcs => "GOOGLE_BASE_URL",
        StoreKind::Azure => "AZURE_STORAGE_ACCOUNT_NAME",
        StoreKind::Http => return None,
    };
    let bucket = &info.bucket;
    Some(match code {
        "NoSuchBucket" | "ContainerNotFound" => {
            format!("no bucket {bucket} {at}: check the bucket in the URL, and {endpoint_variable}")
        }
        "SignatureDoesNotMatch" => {
            "the secret key does not match the access key: check AWS_SECRET_ACCESS_KEY".to_owned()
        }
        // NotSignedUp: what some S3 servers say for an unknown key.
        "InvalidAccessKeyId" | "NotSignedUp" => {
            "the store knows no such access key: check AWS_ACCESS_KEY_ID".to_owned()
        }
        "ExpiredToken" | "InvalidToken" | "TokenRefreshRequired" => {
            "the session token has expired or is not valid: renew AWS_SESSION_TOKEN".to_owned()
        }
        "AuthenticationFailed" => {
            "check AZURE_STORAGE_ACCOUNT_KEY (or AZURE_STORAGE_SAS_KEY)".to_owned()
        }
        "AuthorizationHeaderMalformed"
        | "PermanentRedirect"
        | "IllegalLocationConstraintException" => {
            format!("the bucket {bucket} is in another region: set {prefix}_REGION to it")
        }
        "AccessDenied" | "AuthorizationFailure" | "AuthorizationPermissionMismatch"
            if info.unsigned =>
        {
            format!(
                "the request was sent without credentials (--anonymous or \
                 {prefix}_SKIP_SIGNATURE), and the bucket does not let anyone do this"
            )
        }
        "AccessDenied" | "AuthorizationFailure" | "AuthorizationPermissionMismatch" => {
            "these credentials may not do this here: check the bucket's policy and the \
             credentials' permissions"
                .to_owned()
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3() -> StoreInfo {
        StoreInfo {
            kind: StoreKind::S3,
            bucket: "data".to_owned(),
            endpoint: Some("http://127.0.0.1:9000".to_owned()),
            metadata: vec!["http://169.254.169.254".to_owned()],
            unsigned: false,
        }
    }

    #[test]
    fn a_stores_error_document_gives_its_code_and_message_and_no_more() {
        let text = "Generic S3 error: Error performing list request: Error performing GET \
            http://127.0.0.1:9000/data?list-type=2 in 3ms - Server returned non-2xx status \
            code: 404 Not Found: <?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>\
            NoSuchBucket</Code><Message>The specified bucket does not exist</Message>\
            <BucketName>data</BucketName><RequestId>tx0001</RequestId></Error>";
        assert_eq!(
            describe(&s3(), text),
            "NoSuchBucket (404 Not Found): The specified bucket does not exist; no bucket \
             data at http://127.0.0.1:9000: check the bucket in the URL, and AWS_ENDPOINT_URL \
             (GET http://127.0.0.1:9000/data?list-type=2)"
        );
    }

    #[test]
    fn retries_and_transport_errors_are_kept() {
        let text = "Generic S3 error: Error performing GET http://h/b/k in 224ms, after 2 \
            retries, max_retries: 2, retry_timeout: 5s  - HTTP error: error sending request: \
            Connection refused (os error 111)";
        assert_eq!(
            describe(&s3(), text),
            "error sending request: Connection refused (os error 111) (GET http://h/b/k, \
             after 2 retries)"
        );
    }

    #[test]
    fn a_refusing_metadata_service_means_no_credentials() {
        let text = "Generic S3 error: Error performing PUT \
            http://169.254.169.254/latest/api/token in 1ms - Server returned non-2xx status \
            code: 403 Forbidden: Forbidden";
        let said = describe(&s3(), text);
        assert!(!said.contains("/latest/api/token"), "{said}");
        assert!(
            said.starts_with(
                "no credentials for S3: none in the environment, and the \
             instance metadata service at http://169.254.169.254 answered 403 Forbidden; set \
             AWS_ACCESS_KEY_ID"
            ),
            "{said}"
        );
        let mut given = s3();
        given.metadata.clear();
        assert!(describe(&given, text).starts_with("403 Forbidden: Forbidden ("));
    }

    #[test]
    fn json_and_plain_bodies_give_their_message() {
        let json = "Generic GCS error: Error performing GET http://h/b in 1ms - Server \
            returned non-2xx status code: 400 Bad Request: {\"error\":{\"code\":400,\
            \"message\":\"invalid uploadType\"}}";
        assert_eq!(
            describe(&s3(), json),
            "400 Bad Request: invalid uploadType (GET http://h/b)"
        );
        let html = "Generic HTTP error: Error performing GET http://h/f in 1ms - Server \
            returned non-2xx status code: 500 Internal Server Error: <html><body>oops</body>";
        assert_eq!(
            describe(&s3(), html),
            "500 Internal Server Error (GET http://h/f)"
        );
        assert_eq!(
            describe(&s3(), "Operation not supported"),
            "Operation not supported"
        );
    }
}
