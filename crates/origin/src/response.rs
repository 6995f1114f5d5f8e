//! Responses as the simulator builds them: the body type (whole, or streamed for slow bodies)
//! and the plain replies of the server and the admin API.

use std::convert::Infallible;

use bytes::Bytes;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::{Either, Full, StreamBody};
use hyper::body::Frame;

/// A response body: whole, or streamed (slow bodies).
pub(crate) type Body =
    Either<Full<Bytes>, StreamBody<tokio_stream::wrappers::ReceiverStream<Result<Frame<Bytes>, Infallible>>>>;

pub(crate) const TEXT_HTML: &str = "text/html; charset=utf-8";
pub(crate) const TEXT_PLAIN: &str = "text/plain; charset=utf-8";
pub(crate) const APPLICATION_JSON: &str = "application/json; charset=utf-8";

/// A whole response with its content type.
pub(crate) fn full(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Either::Left(Full::new(body.into())));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}
