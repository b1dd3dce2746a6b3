//! A loopback HTTP/1.1 server for provider tests: serves canned responses (streamed with
//! chunked encoding, optionally cut off or held at a gate) and records every request.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crew_model::{
    ChatMessage, ContentBlock, ModelError, ModelProvider, ModelRequest, RequestContext, Role,
    StreamEvent, SystemPrompt, ToolDefinition,
};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How a canned response ends.
pub enum End {
    /// The final zero-length chunk is sent.
    Complete,
    /// The connection is dropped mid-body.
    Abort,
}

/// One canned response.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Vec<u8>>,
    pub end: End,
    /// Before sending chunk `n`, wait for the signal.
    pub gate: Option<(usize, oneshot::Receiver<()>)>,
}

impl Reply {
    /// A 200 event stream sent in the given pieces.
    pub fn sse<S: AsRef<[u8]>>(chunks: &[S]) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks: chunks.iter().map(|c| c.as_ref().to_vec()).collect(),
            end: End::Complete,
            gate: None,
        }
    }

    /// An error status with a JSON body.
    pub fn error(status: u16, body: Value) -> Self {
        Self::json(status, body)
    }

    /// A JSON body with this status (a whole reply, or a server's answer about its model).
    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![body.to_string().into_bytes()],
            end: End::Complete,
            gate: None,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn aborted(mut self) -> Self {
        self.end = End::Abort;
        self
    }

    /// Holds chunk `at` (and everything after it) until the returned sender fires.
    pub fn gated(mut self, at: usize) -> (Self, oneshot::Sender<()>) {
        let (tx, rx) = oneshot::channel();
        self.gate = Some((at, rx));
        (self, tx)
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub struct Server {
    pub base_url: String,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    task: JoinHandle<()>,
}

impl Server {
    /// Serves `replies` in order, one per connection; later connections get a 500.
    pub async fn start(replies: Vec<Reply>) -> Self {
        let mut replies = replies.into_iter();
        Self::start_with(move |_, _| {
            replies.next().unwrap_or_else(|| {
                Reply::error(500, json!({"error": {"message": "no more canned replies"}}))
            })
        })
        .await
    }

    /// Answers each request with `respond(request, earlier requests)`, one per connection.
    pub async fn start_with(
        mut respond: impl FnMut(&Recorded, &[Recorded]) -> Reply + Send + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&recorded);
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let Some(request) = read_request(&mut socket).await else {
                    continue;
                };
                let reply = {
                    let earlier = log.lock().unwrap().clone();
                    respond(&request, &earlier)
                };
                log.lock().unwrap().push(request);
                serve(socket, reply).await;
            }
        });
        Self {
            base_url,
            recorded,
            task,
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.recorded.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut socket: TcpStream, reply: Reply) {
    let mut head = format!(
        "HTTP/1.1 {} Canned\r\ntransfer-encoding: chunked\r\nconnection: close\r\n",
        reply.status
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let mut gate = reply.gate;
    for (n, chunk) in reply.chunks.iter().enumerate() {
        if let Some((at, _)) = &gate
            && *at == n
        {
            let (_, rx) = gate.take().unwrap();
            let _ = rx.await;
        }
        let framed = [
            format!("{:x}\r\n", chunk.len()).into_bytes(),
            chunk.clone(),
            b"\r\n".to_vec(),
        ]
        .concat();
        if socket.write_all(&framed).await.is_err() || socket.flush().await.is_err() {
            return;
        }
    }
    if let End::Complete = reply.end {
        let _ = socket.write_all(b"0\r\n\r\n").await;
        let _ = socket.shutdown().await;
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut piece = [0u8; 4096];
    let header_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let n = socket.read(&mut piece).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&piece[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut start = lines.next()?.split(' ');
    let method = start.next()?.to_string();
    let path = start.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[header_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut piece).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&piece[..n]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// SSE text for `(event name, data)` pairs.
pub fn sse_events(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

/// SSE text for OpenAI-style `data:` chunks followed by `[DONE]`.
pub fn sse_data(chunks: &[Value]) -> String {
    let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    text.push_str("data: [DONE]\n\n");
    text
}

/// An OpenAI-compatible reply made of `message` (a chat-completion `message` object) looks like: streamed as
/// llama.cpp streams it (role, then content, then each call's name and arguments in pieces,
/// then the finish and the usage), or whole.
pub fn openai_reply(message: Value, finish: &str, streaming: bool) -> Reply {
    let usage = json!({"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150});
    if !streaming {
        return Reply::json(
            200,
            json!({"id": "chatcmpl-x", "object": "chat.completion", "created": 1, "model": "gemma",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage}),
        );
    }
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 1,
            "model": "gemma", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = vec![chunk(json!({"role": "assistant", "content": null}), None)];
    if let Some(text) = message["content"].as_str() {
        // Split as a server does, on no boundary in particular.
        let cut = text
            .char_indices()
            .nth(text.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        for piece in [&text[..cut], &text[cut..]] {
            chunks.push(chunk(json!({"content": piece}), None));
        }
    }
    for (index, call) in message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        chunks.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""}}]}),
            None,
        ));
        let arguments = call["function"]["arguments"].as_str().unwrap_or_default();
        let cut = arguments.len() / 2;
        for piece in [&arguments[..cut], &arguments[cut..]] {
            chunks.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    chunks.push(chunk(json!({}), Some(finish)));
    chunks.push(
        json!({"id": "chatcmpl-x", "object": "chat.completion.chunk", "choices": [],
        "usage": usage}),
    );
    Reply::sse(&[sse_data(&chunks)])
}

pub fn openai_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// Collects a whole stream, failing the test if it does not end in time.
pub async fn collect(
    provider: &dyn ModelProvider,
    req: ModelRequest,
) -> Vec<Result<StreamEvent, ModelError>> {
    tokio::time::timeout(Duration::from_secs(30), provider.stream(req).collect())
        .await
        .expect("stream did not end")
}

/// A request with a two-part system prompt, two tools and a finished tool round.
pub fn sample_request() -> ModelRequest {
    ModelRequest {
        model: "test-model".into(),
        system: SystemPrompt {
            static_prefix: "You are a crew teammate.".into(),
            dynamic_suffix: "Current task: 3".into(),
        },
        messages: vec![
            ChatMessage::user_text("Fix the bug"),
            ChatMessage {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text {
                        text: "Reading.".into(),
                    },
                    ContentBlock::ToolUse {
                        id: "toolu_1".into(),
                        name: "read_file".into(),
                        input: json!({"path": "src/lib.rs"}),
                    },
                ],
            },
            ChatMessage::user_tool_results(vec![ContentBlock::tool_result(
                "toolu_1",
                "no such file",
                true,
            )]),
        ],
        tools: vec![
            ToolDefinition {
                name: "read_file".into(),
                description: "Read a file".into(),
                input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            },
            ToolDefinition {
                name: "grep".into(),
                description: "Search".into(),
                input_schema: json!({"type": "object", "properties": {"pattern": {"type": "string"}}}),
            },
        ],
        max_tokens: 1024,
        context: RequestContext {
            agent: "alice".into(),
            role: "coder".into(),
            task: Some("3".into()),
        },
    }
}

// Anthropic Messages API stream pieces, for loopback servers.

pub fn message_start(cache_read: u64, cache_write: u64) -> (&'static str, Value) {
    (
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg", "type": "message",
            "role": "assistant", "content": [], "model": "claude-x", "stop_reason": null,
            "usage": {"input_tokens": 10, "output_tokens": 1,
                "cache_creation_input_tokens": cache_write, "cache_read_input_tokens": cache_read}}}),
    )
}

pub fn block(index: u64, start: Value, deltas: &[Value]) -> Vec<(&'static str, Value)> {
    let mut events = vec![(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": start}),
    )];
    for delta in deltas {
        events.push((
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
    }
    events.push((
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    ));
    events
}

pub fn text(index: u64, text: &str) -> Vec<(&'static str, Value)> {
    block(
        index,
        json!({"type": "text", "text": ""}),
        &[json!({"type": "text_delta", "text": text})],
    )
}

pub fn end(reason: &str) -> Vec<(&'static str, Value)> {
    vec![
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]
}

pub fn reply(parts: Vec<Vec<(&'static str, Value)>>) -> Reply {
    let events: Vec<_> = parts.into_iter().flatten().collect();
    Reply::sse(&[sse_events(&events)])
}

/// A `tool_use` block calling `name` with `input` (JSON text), streamed as one delta.
pub fn tool_use(index: u64, id: &str, name: &str, input: &str) -> Vec<(&'static str, Value)> {
    block(
        index,
        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
        &[json!({"type": "input_json_delta", "partial_json": input})],
    )
}

/// The request's messages with every `cache_control` removed.
pub fn unmarked(body: &Value) -> Vec<Value> {
    let mut messages = body["messages"].as_array().unwrap().clone();
    for message in &mut messages {
        for block in message["content"].as_array_mut().unwrap() {
            block.as_object_mut().unwrap().remove("cache_control");
        }
    }
    messages
}
