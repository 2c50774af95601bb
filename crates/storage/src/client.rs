//! The HTTP client every store sends its requests through: `object_store`'s own (reqwest
//! over rustls), with what that one leaves out. A certificate that does not verify is not
//! tried again (it will not verify on the next try either) and says why and what to set; a
//! plain-HTTP endpoint names the variable that allows it; a refused connection says so; and
//! an answer that asks for a pause (`Retry-After` on a 429 or 5xx) gets it before the
//! store's own backoff, or fails at once when the pause is past the retry timeout. Every
//! answer but a large object's body is read whole before it is handed on, so that a body
//! cut short (a listing, a manifest, a lock, a ranged read) fails its request where the
//! store's retries see it, within the same bounds as a request that got no answer.

use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse,
    HttpResponseBody, HttpService, ReqwestConnector,
};
use object_store::ClientOptions;
use rustls::CertificateError;

use crate::kind::StoreKind;
use crate::retry::NetworkBounds;
use crate::tries;

/// What a server that answers no `PROPFIND` is said to be.
pub(crate) const NO_WEBDAV: &str = "it does not speak WebDAV";

/// Builds the clients of one kind of store.
#[derive(Debug)]
pub(crate) struct Connector {
    kind: StoreKind,
    bounds: NetworkBounds,
}

impl Connector {
    pub(crate) fn new(kind: StoreKind, bounds: NetworkBounds) -> Connector {
        Connector { kind, bounds }
    }
}

impl HttpConnector for Connector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Client {
            inner,
            kind: self.kind,
            bounds: self.bounds,
        }))
    }
}

#[derive(Debug)]
struct Client {
    inner: HttpClient,
    kind: StoreKind,
    /// The bounds of the store whose requests this client sends.
    bounds: NetworkBounds,
}

/// What this client says in place of the HTTP library's words.
#[derive(Debug)]
pub(crate) struct Said(pub(crate) String);

impl fmt::Display for Said {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StdError for Said {}

#[async_trait]
impl HttpService for Client {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let uri = request.uri().clone();
        let method = request.method().clone();
        let read_whole = answer_read_whole(&request);
        let response = match self.inner.execute(request).await {
            Ok(response) => response,
            Err(err) => {
                let err = self.described(err, &uri.to_string());
                tries::record(method.as_str(), &uri.to_string(), &err.to_string());
                return Err(err);
            }
        };
        let status = response.status();
        if status.as_u16() == 429 || status.is_server_error() {
            tries::record(method.as_str(), &uri.to_string(), status.as_str());
        }
        // A server that does not speak WebDAV will not on the next try either (501 would
        // be tried again as a server error).
        if method.as_str() == "PROPFIND" && matches!(status.as_u16(), 400 | 405 | 501) {
            return Err(HttpError::new(
                HttpErrorKind::Unknown,
                Said(format!("{status}: {NO_WEBDAV}")),
            ));
        }
        // An error's document is read whole too: one cut short is a failed try, not a
        // `404` or `412` with no document.
        let response = if !status.is_success() || read_whole || short_body(&response) {
            let (parts, body) = response.into_parts();
            match body.bytes().await {
                Ok(body) => HttpResponse::from_parts(parts, HttpResponseBody::from(body)),
                Err(err) => {
                    let err = HttpError::new(
                        HttpErrorKind::Interrupted,
                        Said(format!("the body of the answer was cut short: {err}")),
                    );
                    tries::record(method.as_str(), &uri.to_string(), &err.to_string());
                    return Err(err);
                }
            }
        } else {
            response
        };
        if !(status.as_u16() == 429 || status.is_server_error()) {
            return Ok(response);
        }
        let Some(wait) = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| retry_after(value, SystemTime::now()))
        else {
            return Ok(response);
        };
        let bounds = self.bounds;
        if wait > bounds.retry_timeout {
            return Err(HttpError::new(
                HttpErrorKind::Unknown,
                Said(format!(
                    "{status}: the server asks to be asked again in {} s (Retry-After), \
                     past the retry timeout of {} s (--retry-timeout)",
                    wait.as_secs(),
                    bounds.retry_timeout.as_secs()
                )),
            ));
        }
        if bounds.retries == 0 || wait.is_zero() {
            return Ok(response);
        }
        // The answer's body was read above, so that the pause cannot time it out.
        tokio::time::sleep(wait).await;
        Ok(response)
    }
}

/// Bytes of an object's body past which it is streamed rather than read whole (the ranges
/// of `transfer` are smaller).
const READ_WHOLE_BYTES: u64 = 16 << 20;

/// Whether the answer to `request` is read whole before it is handed on: every answer but
/// an object's body (a `GET` without a query) past [`READ_WHOLE_BYTES`] or of no stated
/// length, which is streamed (and resumed by the store from its last byte when it breaks).
fn answer_read_whole(request: &HttpRequest) -> bool {
    // Listings (`?list-type=2`), heads, writes, multipart answers, PROPFIND.
    request.method() != reqwest::Method::GET || request.uri().query().is_some()
}

/// Whether `response`'s body is short enough to read whole.
fn short_body(response: &HttpResponse) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok())
        .is_some_and(|length| length <= READ_WHOLE_BYTES)
}

impl Client {
    /// The error of a request that got no answer, in words that say what happened.
    fn described(&self, err: HttpError, url: &str) -> HttpError {
        if let Some(tls) = causes(&err).find_map(rustls_error) {
            return HttpError::new(
                HttpErrorKind::Unknown,
                Said(certificate_refused(tls, self.kind, url)),
            );
        }
        let builder = causes(&err)
            .find_map(|cause| cause.downcast_ref::<reqwest::Error>())
            .is_some_and(reqwest::Error::is_builder);
        if builder && url.starts_with("http://") {
            if let Some(prefix) = self.kind.variable_prefix() {
                return HttpError::new(
                    HttpErrorKind::Unknown,
                    Said(format!(
                        "plain HTTP to {} is refused: set {prefix}_ALLOW_HTTP=true to allow it",
                        origin(url)
                    )),
                );
            }
        }
        // reqwest's "error sending request" hides why: the innermost cause says it.
        let innermost = causes(&err)
            .last()
            .map(|cause| cause.to_string())
            .unwrap_or_default();
        let outer = err
            .source()
            .map(|cause| cause.to_string())
            .unwrap_or_default();
        if innermost.is_empty() || outer.contains(&innermost) {
            return err;
        }
        HttpError::new(err.kind(), Said(format!("{outer}: {innermost}")))
    }
}

/// `err` and its causes, looking into the I/O errors that carry another error.
fn causes<'a>(
    err: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(
        Some(err),
        |&cause: &&'a (dyn StdError + 'static)| match cause
            .downcast_ref::<io::Error>()
            .and_then(io::Error::get_ref)
        {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => cause.source(),
        },
    )
}

fn rustls_error<'a>(cause: &'a (dyn StdError + 'static)) -> Option<&'a rustls::Error> {
    cause.downcast_ref::<rustls::Error>()
}

/// `scheme://host:port` of `url`.
fn origin(url: &str) -> String {
    url::Url::parse(url)
        .map(|parsed| parsed.origin().ascii_serialization())
        .unwrap_or_else(|_| url.to_owned())
}

/// Why a TLS connection failed and what to do, for the store of `kind` at `url`.
fn certificate_refused(err: &rustls::Error, kind: StoreKind, url: &str) -> String {
    let host = url::Url::parse(url)
        .ok()
        .and_then(|parsed| parsed.host_str().map(str::to_owned))
        .unwrap_or_default();
    let rustls::Error::InvalidCertificate(certificate) = err else {
        return format!(
            "TLS with {} failed: {err} (not tried again; is it a TLS server?)",
            origin(url)
        );
    };
    let (why, what) = match certificate {
        CertificateError::UnknownIssuer => {
            let variables: &[&str] = if kind == StoreKind::S3 {
                &["SSL_CERT_FILE", "AWS_CA_BUNDLE"]
            } else {
                &["SSL_CERT_FILE"]
            };
            let set: Vec<String> = variables
                .iter()
                .filter_map(|variable| {
                    std::env::var_os(variable)
                        .filter(|path| !path.is_empty())
                        .map(|path| format!("{variable}={}", path.to_string_lossy()))
                })
                .collect();
            let what = if set.is_empty() {
                format!(
                    "if a private CA signed it, set {} to a PEM file holding that CA's certificate",
                    variables.join(" or ")
                )
            } else {
                format!(
                    "{} holds no CA that signed it: add that CA's certificate (PEM)",
                    set.join(" and ")
                )
            };
            ("it is signed by an unknown issuer".to_owned(), what)
        }
        CertificateError::NotValidForName => (
            format!("it is not valid for the name {host}"),
            "reach the server by a name its certificate holds".to_owned(),
        ),
        CertificateError::NotValidForNameContext { presented, .. } => (
            format!(
                "it is not valid for the name {host} (only for {})",
                presented
                    .iter()
                    .map(|name| presented_name(name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "reach the server by a name its certificate holds".to_owned(),
        ),
        CertificateError::Expired => (
            "it has expired".to_owned(),
            "the server needs a new certificate".to_owned(),
        ),
        CertificateError::ExpiredContext { not_after, .. } => (
            format!("it expired on {}", date(not_after.as_secs())),
            "the server needs a new certificate".to_owned(),
        ),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => (
            "it is not valid yet".to_owned(),
            "check this machine's clock, or the server's certificate".to_owned(),
        ),
        other => (
            other.to_string(),
            "check the server's certificate".to_owned(),
        ),
    };
    format!(
        "the certificate of {} was refused: {why} (not tried again); {what}",
        origin(url)
    )
}

/// A name a certificate presents, as rustls writes it (`DnsName("host")`), bare.
fn presented_name(name: &str) -> &str {
    match name.split_once('(') {
        Some((_, inner)) => inner.trim_end_matches(')').trim_matches('"'),
        None => name,
    }
}

/// A day as `YYYY-MM-DD`, from seconds since 1970 (UTC).
fn date(secs: u64) -> String {
    // Howard Hinnant's days-to-civil conversion.
    let days = (secs / 86_400) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The pause a `Retry-After` value asks for: seconds, or an HTTP date (`now` to count
/// from); `None` when it is neither.
fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = http_date(value)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// Seconds since 1970 of an HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn http_date(value: &str) -> Option<u64> {
    let mut fields = value.split_whitespace();
    let _weekday = fields.next()?;
    let day: i64 = fields.next()?.parse().ok()?;
    let month = match fields.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = fields.next()?.parse().ok()?;
    let mut time = fields
        .next()?
        .split(':')
        .map(|part| part.parse::<i64>().ok());
    let (hour, minute, second) = (time.next()??, time.next()??, time.next()??);
    if fields.next()? != "GMT" {
        return None;
    }
    // Howard Hinnant's civil-to-days conversion.
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y.div_euclid(400);
    let year_of_era = y.rem_euclid(400);
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    u64::try_from(days * 86_400 + hour * 3600 + minute * 60 + second).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_read_as_seconds_or_as_a_date() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:50:37 GMT", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(retry_after("soon", now), None);
        assert_eq!(retry_after("Sun, 06 Nov 1994 08:49:37 CET", now), None);
    }

    #[test]
    fn dates_are_days_of_the_calendar() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(784_111_777), "1994-11-06");
        assert_eq!(date(951_782_400), "2000-02-29");
        assert_eq!(
            http_date("Tue, 29 Feb 2000 00:00:00 GMT"),
            Some(951_782_400)
        );
    }
}
