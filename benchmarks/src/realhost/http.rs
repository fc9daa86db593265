//! A keep-alive HTTP/1.1 connection to policy-server, for the measurements that send requests
//! themselves (instruction counts, fixed-rate latency) rather than through `wrk`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// An HTTP/1.1 connection to policy-server that stays open: a new connection per request would
/// add the same host work to every module and pull the ratios towards 1.
pub struct Connection {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Connection {
    pub fn open(port: u16) -> Result<Connection, String> {
        let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
        // The head and the body are two writes: with Nagle's algorithm the body would wait for
        // the head's delayed acknowledgement (40 ms on Linux).
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let reader = BufReader::new(stream.try_clone().map_err(|e| e.to_string())?);
        Ok(Connection {
            writer: stream,
            reader,
        })
    }

    /// POSTs `body` to `path` and reads the whole answer (by its `content-length`).
    pub fn post(&mut self, path: &str, body: &[u8]) -> Result<(), String> {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        );
        self.writer
            .write_all(head.as_bytes())
            .and_then(|()| self.writer.write_all(body))
            .map_err(|e| format!("POST {path}: {e}"))?;
        let mut length = None;
        let mut status = String::new();
        self.reader
            .read_line(&mut status)
            .map_err(|e| e.to_string())?;
        if !status.starts_with("HTTP/1.1 200") {
            return Err(format!("POST {path}: {}", status.trim()));
        }
        loop {
            let mut line = String::new();
            self.reader
                .read_line(&mut line)
                .map_err(|e| e.to_string())?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse::<usize>().ok();
                }
            }
        }
        let length = length.ok_or_else(|| format!("POST {path}: no content-length"))?;
        let mut answer = vec![0; length];
        self.reader
            .read_exact(&mut answer)
            .map_err(|e| format!("POST {path}: {e}"))
    }
}
