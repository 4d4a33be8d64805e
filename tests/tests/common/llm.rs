//! A scripted OpenAI-compatible Chat Completions server on 127.0.0.1 for the extraction tests:
//! it answers each request with the next scripted reply and records every request (path,
//! authorization header, JSON body). Unscripted requests get a 500 that says so.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Waits this long before answering (a slow endpoint).
    pub delay: Duration,
}

impl Reply {
    /// A Chat Completions answer whose message is `content`, counting `tokens` in `usage`.
    pub fn message(content: &str, tokens: u64) -> Reply {
        let body = json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": tokens.saturating_sub(50), "completion_tokens": tokens.min(50), "total_tokens": tokens}
        });
        Reply { status: 200, headers: Vec::new(), body: body.to_string().into_bytes(), delay: Duration::ZERO }
    }

    /// A Chat Completions answer whose message is `content` and whose `usage` is `usage`, as an
    /// endpoint may claim it.
    pub fn with_usage(content: &str, usage: Value) -> Reply {
        let body = json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": usage
        });
        Reply { status: 200, headers: Vec::new(), body: body.to_string().into_bytes(), delay: Duration::ZERO }
    }

    /// An answer proposing `experiences` (each a JSON object) as strict JSON.
    pub fn proposals(experiences: Value, tokens: u64) -> Reply {
        Reply::message(&json!({"experiences": experiences}).to_string(), tokens)
    }

    pub fn status(status: u16, body: &str) -> Reply {
        Reply { status, headers: Vec::new(), body: body.as_bytes().to_vec(), delay: Duration::ZERO }
    }

    /// A gzip-compressed answer (`Content-Encoding: gzip`) whose message, once decoded, is
    /// `decoded_bytes` long: a few hundred kilobytes on the wire.
    pub fn gzip_bomb(decoded_bytes: usize) -> Reply {
        use std::io::Write as _;
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(br#"{"choices":[{"message":{"role":"assistant","content":""#).expect("gzip");
        let chunk = vec![b'A'; 1 << 20];
        let mut left = decoded_bytes;
        while left > 0 {
            let n = left.min(chunk.len());
            encoder.write_all(&chunk[..n]).expect("gzip");
            left -= n;
        }
        encoder.write_all(br#""}}]}"#).expect("gzip");
        let body = encoder.finish().expect("gzip");
        Reply { status: 200, headers: Vec::new(), body, delay: Duration::ZERO }.with_header("Content-Encoding", "gzip")
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
    /// The raw body, for checks that a text never appears anywhere in it.
    pub raw: String,
    /// When it arrived.
    pub at: std::time::Instant,
}

#[derive(Default)]
struct Shared {
    script: VecDeque<Reply>,
    recorded: Vec<Recorded>,
}

pub struct ScriptedLlm {
    pub base_url: String,
    shared: Arc<Mutex<Shared>>,
}

impl ScriptedLlm {
    pub fn start() -> ScriptedLlm {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base_url = format!("http://{}/v1", listener.local_addr().expect("address"));
        let shared = Arc::new(Mutex::new(Shared::default()));
        let serving = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = serving.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &shared);
                });
            }
        });
        ScriptedLlm { base_url, shared }
    }

    /// Queues replies, answered in order.
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.lock().unwrap().script.extend(replies);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().unwrap().recorded.clone()
    }

    /// Waits until `count` requests arrived.
    pub fn wait_for_requests(&self, count: usize, within: Duration) -> Vec<Recorded> {
        let deadline = Instant::now() + within;
        loop {
            let requests = self.requests();
            if requests.len() >= count {
                return requests;
            }
            assert!(Instant::now() < deadline, "{count} requests expected, {} arrived", requests.len());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The `[extraction]` config section pointing at this server.
    pub fn config(&self, extra: &str) -> String {
        format!(
            "[embedding]\nenabled = false\n\n[extraction]\nbase_url = \"{}\"\nmodel = \"scripted\"\nretry_seconds = 1\n{extra}\n",
            self.base_url
        )
    }
}

fn serve(stream: TcpStream, shared: &Mutex<Shared>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let path = request_line.split_whitespace().nth(1).unwrap_or("").to_owned();
    let mut length = 0usize;
    let mut authorization = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let value = value.trim().to_owned();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse().unwrap_or(0),
                "authorization" => authorization = Some(value),
                _ => {}
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let raw = String::from_utf8_lossy(&body).into_owned();
    let reply = {
        let mut shared = shared.lock().unwrap();
        shared.recorded.push(Recorded {
            path,
            authorization,
            body: serde_json::from_str(&raw).unwrap_or(Value::Null),
            raw,
            at: std::time::Instant::now(),
        });
        shared.script.pop_front().unwrap_or_else(|| Reply::status(500, "{\"error\": \"unscripted request\"}"))
    };
    std::thread::sleep(reply.delay);
    let mut stream = stream;
    let reason = match reply.status {
        200 => "OK",
        400 => "Bad Request",
        429 => "Too Many Requests",
        _ => "Status",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(&reply.body)?;
    stream.flush()
}
