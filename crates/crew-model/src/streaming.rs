//! Drives an HTTP server-sent-events response through a provider-specific decoder and yields
//! `StreamEvent`s. The request is only sent when the stream is first polled.

use std::collections::VecDeque;

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use reqwest::{RequestBuilder, Response};

use super::error::ModelError;
use super::event::StreamEvent;
use super::http::{self, chain};
use super::secret::ApiKey;
use super::sse::{SseEvent, SseParser};

/// Whether the decoder wants more events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    More,
    /// The reply is complete; the rest of the body is not read.
    Done,
}

/// Turns one provider's SSE events into `StreamEvent`s.
pub(crate) trait Decoder: Send + 'static {
    /// Handles one event, appending what it produces to `out`.
    fn on_event(
        &mut self,
        event: SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Progress, ModelError>;

    /// The body ended before the decoder said `Done`: finish the reply or explain why it is
    /// incomplete.
    fn on_end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ModelError>;
}

/// Sends `request` when first polled and decodes its event-stream body. `key` is redacted
/// from error messages.
pub(crate) fn sse_stream<D: Decoder>(
    request: RequestBuilder,
    key: Option<ApiKey>,
    decoder: D,
) -> BoxStream<'static, Result<StreamEvent, ModelError>> {
    let connect = async move { http::send(request, key.as_ref()).await }.boxed();
    let driver = Driver {
        connect: Some(connect),
        body: None,
        parser: SseParser::new(),
        decoder,
        ready: VecDeque::new(),
        failure: None,
        finished: false,
    };
    stream::unfold(driver, Driver::next).boxed()
}

struct Driver<D> {
    connect: Option<BoxFuture<'static, Result<Response, ModelError>>>,
    /// Body chunks, read errors already mapped.
    body: Option<BoxStream<'static, Result<Vec<u8>, ModelError>>>,
    parser: SseParser,
    decoder: D,
    ready: VecDeque<StreamEvent>,
    failure: Option<ModelError>,
    finished: bool,
}

impl<D: Decoder> Driver<D> {
    /// Events decoded so far go out first, then a failure, then the end.
    async fn next(mut self) -> Option<(Result<StreamEvent, ModelError>, Self)> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some((Ok(event), self));
            }
            if let Some(error) = self.failure.take() {
                self.finished = true;
                return Some((Err(error), self));
            }
            if self.finished {
                return None;
            }
            self.advance().await;
        }
    }

    async fn advance(&mut self) {
        if let Some(connect) = self.connect.take() {
            match connect.await {
                Ok(response) => {
                    let body = response.bytes_stream().map(|chunk| {
                        chunk.map(|bytes| bytes.to_vec()).map_err(|error| {
                            ModelError::stream(format!(
                                "connection lost mid-stream: {}",
                                chain(&error)
                            ))
                        })
                    });
                    self.body = Some(body.boxed());
                }
                Err(error) => self.fail(error),
            }
            return;
        }
        let Some(body) = self.body.as_mut() else {
            self.finished = true;
            return;
        };
        match body.next().await {
            Some(Ok(bytes)) => {
                let mut out = Vec::new();
                for event in self.parser.push(&bytes) {
                    match self.decoder.on_event(event, &mut out) {
                        Ok(Progress::More) => {}
                        Ok(Progress::Done) => {
                            self.finish();
                            break;
                        }
                        Err(error) => {
                            self.fail(error);
                            break;
                        }
                    }
                }
                self.ready.extend(out);
            }
            Some(Err(error)) => self.fail(error),
            None => {
                if self.parser.finish() {
                    tracing::debug!("response body ended in the middle of an event");
                }
                let mut out = Vec::new();
                if let Err(error) = self.decoder.on_end(&mut out) {
                    self.fail(error);
                }
                self.ready.extend(out);
                self.finish();
            }
        }
    }

    fn fail(&mut self, error: ModelError) {
        self.failure = Some(error);
        self.finish();
    }

    /// Stops reading and drops the connection.
    fn finish(&mut self) {
        self.finished = true;
        self.body = None;
    }
}
